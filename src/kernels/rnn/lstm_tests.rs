use super::super::lstm_rows::{lstm_backward_rows, lstm_forward_rows};
use super::*;

fn val(i: usize) -> f64 {
    ((i * 37 % 23) as f64 - 11.0) / 40.0
}

/// A layer's inputs drawn from [`val`]: `x`, `h0`, `c0`, `w_ih`, `w_hh`, bias.
struct Case {
    s: Steps,
    input: usize,
    x: Vec<f64>,
    h0: Vec<f64>,
    c0: Vec<f64>,
    w_ih: Vec<f64>,
    w_hh: Vec<f64>,
    bias: Vec<f64>,
}

impl Case {
    fn new(hd: usize, input: usize, sizes: Vec<usize>, reverse: bool) -> Case {
        let s = Steps::new(hd, sizes, reverse);
        let (n, b) = (s.rows(), s.batch);
        let draw = |len: usize, at: usize| (0..len).map(|i| val(i + at)).collect::<Vec<f64>>();
        Case {
            x: draw(n * input, 1),
            h0: draw(b * hd, 3),
            c0: draw(b * hd, 7),
            w_ih: draw(4 * hd * input, 13),
            w_hh: draw(4 * hd * hd, 5),
            bias: draw(4 * hd, 11),
            s,
            input,
        }
    }

    fn weights(&self) -> LstmWeights<'_, f64> {
        LstmWeights {
            input: self.input,
            w_ih: &self.w_ih,
            w_hh: &self.w_hh,
            bias: Some(&self.bias),
        }
    }
}

fn close(x: &[f64], y: &[f64]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(p, q)| (p - q).abs() < 1e-12)
}

const ALL: LstmNeeds = LstmNeeds {
    x: true,
    w_ih: true,
    w_hh: true,
    bias: true,
};

/// Every way of running the layer computes the same numbers: the row split
/// (projection in the loop) against the unit split (projection first), and in
/// backward the gradients made in the loop against the products after it and
/// the unit split's, on packed sequences with rows that end early (and, in
/// reverse, start late), with 4- and 8-row chunks.
#[test]
fn lstm_splits_and_fused_gradients_agree() {
    for (sizes, hd, input) in [(vec![7, 7, 5, 2], 40, 9), (vec![17, 17, 16, 9, 3], 24, 16)] {
        for reverse in [false, true] {
            let k = Case::new(hd, input, sizes.clone(), reverse);
            let (s, w) = (&k.s, k.weights());
            let (n, b) = (s.rows(), s.batch);
            let a = lstm_forward_rows(s, &k.x, &k.h0, &k.c0, &w);
            let gi = project(s, &k.x, &w);
            let u = lstm_forward_units(s, &gi, &k.h0, &k.c0, &k.w_hh, None);
            assert!(close(&a.out, &u.out) && close(&a.h_n, &u.h_n) && close(&a.c_n, &u.c_n));
            assert!(close(&a.gates, &u.gates) && close(&a.h_prev, &u.h_prev));
            let g_out: Vec<f64> = (0..n * hd).map(|i| val(i + 2)).collect();
            let g_hn: Vec<f64> = (0..b * hd).map(|i| val(i + 9)).collect();
            let g_cn: Vec<f64> = (0..b * hd).map(|i| val(i + 17)).collect();
            let saved = LstmForwardRef {
                gates: &a.gates,
                c_tanh: &a.c_tanh,
                c_prev: &a.c_prev,
                h_prev: &a.h_prev,
            };
            let fused = lstm_backward_rows(s, &saved, &k.x, &g_out, &g_hn, &g_cn, &w, Some(&ALL));
            let rows = lstm_backward_rows(s, &saved, &k.x, &g_out, &g_hn, &g_cn, &w, None);
            let after = products_after(
                s,
                &rows.d_gates,
                &a.h_prev,
                &k.x,
                &w,
                ALL,
                rows.dh0,
                rows.dc0,
            );
            let (d, dh, dc) = lstm_backward_units(s, &saved, &g_out, &g_hn, &g_cn, &k.w_hh);
            let units = products_after(s, &d, &a.h_prev, &k.x, &w, ALL, dh, dc);
            for other in [&after, &units] {
                assert!(close(&fused.dh0, &other.dh0) && close(&fused.dc0, &other.dc0));
                for (x, y) in [
                    (&fused.dx, &other.dx),
                    (&fused.dw_ih, &other.dw_ih),
                    (&fused.dw_hh, &other.dw_hh),
                    (&fused.db, &other.db),
                ] {
                    assert!(close(x.as_deref().unwrap(), y.as_deref().unwrap()));
                }
            }
        }
    }
}

/// Gradients not asked for are not made, and the rest do not change.
#[test]
fn lstm_backward_makes_only_what_is_needed() {
    let k = Case::new(8, 5, vec![16, 16, 12], false);
    let (s, w) = (&k.s, k.weights());
    let f = lstm_forward(s, &k.x, &k.h0, &k.c0, &w);
    let saved = LstmForwardRef {
        gates: &f.gates,
        c_tanh: &f.c_tanh,
        c_prev: &f.c_prev,
        h_prev: &f.h_prev,
    };
    let g_out = vec![1.0; s.rows() * 8];
    let z = vec![0.0; 16 * 8];
    let all = lstm_backward(s, &saved, &k.x, &g_out, &z, &z, &w, ALL);
    let some = LstmNeeds {
        x: false,
        w_ih: false,
        w_hh: true,
        bias: false,
    };
    let part = lstm_backward(s, &saved, &k.x, &g_out, &z, &z, &w, some);
    assert!(part.dx.is_none() && part.dw_ih.is_none() && part.db.is_none());
    assert!(close(
        part.dw_hh.as_deref().unwrap(),
        all.dw_hh.as_deref().unwrap()
    ));
    assert!(close(&part.dh0, &all.dh0) && close(&part.dc0, &all.dc0));
}

/// One LSTM step by the formulas, against the loop, and a finite-difference
/// check of every gradient on a two-step, two-length packed sequence, for
/// both splits.
#[test]
fn lstm_layer_matches_formulas_and_differences() {
    let (hd, input) = (2, 3);
    for sizes in [vec![2, 1], vec![9, 9, 4]] {
        let k = Case::new(hd, input, sizes, false);
        let s = &k.s;
        let (n, b) = (s.rows(), s.batch);
        let fwd = lstm_forward(s, &k.x, &k.h0, &k.c0, &k.weights());
        // Step 0, row 0, unit 0 by hand.
        let pre: Vec<f64> = (0..4)
            .map(|g| {
                let r = g * hd;
                k.bias[r]
                    + (0..input)
                        .map(|m| k.x[m] * k.w_ih[r * input + m])
                        .sum::<f64>()
                    + (0..hd).map(|m| k.h0[m] * k.w_hh[r * hd + m]).sum::<f64>()
            })
            .collect();
        let sg = |x: f64| 1.0 / (1.0 + (-x).exp());
        let c = sg(pre[1]) * k.c0[0] + sg(pre[0]) * pre[2].tanh();
        assert!((fwd.out[0] - sg(pre[3]) * c.tanh()).abs() < 1e-12);
        // Loss = sum(out * wts) + sum(h_n) + 2 sum(c_n).
        let wts: Vec<f64> = (0..n * hd).map(|i| val(i + 2)).collect();
        let loss = |k: &Case| {
            let f = lstm_forward(&k.s, &k.x, &k.h0, &k.c0, &k.weights());
            f.out.iter().zip(&wts).map(|(a, b)| a * b).sum::<f64>()
                + f.h_n.iter().sum::<f64>()
                + 2.0 * f.c_n.iter().sum::<f64>()
        };
        let saved = LstmForwardRef {
            gates: &fwd.gates,
            c_tanh: &fwd.c_tanh,
            c_prev: &fwd.c_prev,
            h_prev: &fwd.h_prev,
        };
        let (ones, twos) = (vec![1.0; b * hd], vec![2.0; b * hd]);
        let g = lstm_backward(s, &saved, &k.x, &wts, &ones, &twos, &k.weights(), ALL);
        type Field = fn(&mut Case) -> &mut Vec<f64>;
        let fields: [(Field, &[f64]); 6] = [
            (|k| &mut k.x, g.dx.as_deref().unwrap()),
            (|k| &mut k.h0, &g.dh0),
            (|k| &mut k.c0, &g.dc0),
            (|k| &mut k.w_ih, g.dw_ih.as_deref().unwrap()),
            (|k| &mut k.w_hh, g.dw_hh.as_deref().unwrap()),
            (|k| &mut k.bias, g.db.as_deref().unwrap()),
        ];
        for (field, grad) in fields {
            let mut p = Case::new(hd, input, k.s.sizes.clone(), false);
            for (i, &want) in grad.iter().enumerate() {
                field(&mut p)[i] += 1e-6;
                let up = loss(&p);
                field(&mut p)[i] -= 2e-6;
                let down = loss(&p);
                field(&mut p)[i] += 1e-6;
                let fd = (up - down) / 2e-6;
                assert!((fd - want).abs() < 1e-6, "{i}: {fd} vs {want}");
            }
        }
    }
}
