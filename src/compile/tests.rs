//! Capture and replay without Python: ops recorded the way the bindings
//! record them, a tape built from the capture, and replays compared with
//! the same computation run eagerly.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use smallvec::smallvec;

use super::*;
use crate::autograd::{self, BackwardRequest};
use crate::ops;
use crate::tensor::Tensor;

type F = dyn Fn(&[&Tensor]) -> crate::Result<Tensor> + Send + Sync;

/// Runs `f` and, while capturing, records it as the bindings' `run_op` does.
fn op(name: &str, ins: &[&Tensor], f: Arc<F>) -> Tensor {
    let seq0 = autograd::current_seq();
    let out = f(ins).unwrap();
    if active() {
        let g = f.clone();
        record(
            name,
            ins,
            &[],
            std::slice::from_ref(&out),
            Arc::new(move |t, _| Ok(vec![g(t)?])),
            Some(seq0),
        );
    }
    out
}

fn ramp(n: usize, scale: f32, shift: f32) -> Tensor {
    let v: Vec<f32> = (0..n).map(|i| (i as f32 * scale + shift).sin()).collect();
    Tensor::from_vec(v, smallvec![n])
}

fn backward(root: &Tensor) {
    let req = BackwardRequest {
        roots: vec![root.clone()],
        grads: vec![Tensor::full(root.shape(), 1.0, root.dtype())],
        inputs: None,
        retain_graph: false,
        create_graph: false,
        accumulate: true,
    };
    record_backward(req, false, |req| autograd::run_backward(req).map(drop)).unwrap();
}

/// One training-style step: `loss = sum(tanh(x) * w + exp(x))`, its
/// gradient into `w`. Returns the loss.
fn step(x: &Tensor, w: &Tensor) -> Tensor {
    note_set_grad(w, None);
    w.set_grad(None);
    let t = op("tanh", &[x], Arc::new(|t| ops::tanh(t[0])));
    let m = op("mul", &[&t, w], Arc::new(|t| ops::mul(t[0], t[1])));
    let e = op("exp", &[x], Arc::new(|t| ops::exp(t[0])));
    let s = op("add", &[&m, &e], Arc::new(|t| ops::add(t[0], t[1])));
    let loss = op("sum", &[&s], Arc::new(|t| ops::sum(t[0], None, false)));
    backward(&loss);
    loss
}

fn capture_step(x: &Tensor, w: &Tensor) -> Tape {
    begin(std::slice::from_ref(x), &[]).unwrap();
    let loss = step(x, w);
    let mut c = end().unwrap();
    assert!(c.failure.is_none(), "{:?}", c.failure);
    let outs = vec![c.slot_of(&loss)];
    Tape::build(c, outs, true, 1)
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn a_replayed_step_matches_the_eager_step_bit_for_bit() {
    let n = 37;
    let w = ramp(n, 0.3, 0.1);
    w.set_requires_grad(true).unwrap();
    let tape = capture_step(&ramp(n, 0.7, 0.2), &w);
    let st = tape.stats();
    assert!(st.static_reason.is_none(), "{:?}", st.static_reason);
    for k in 0..3 {
        let x = ramp(n, 0.11 * (k + 1) as f32, -0.5);
        let out = tape.run(std::slice::from_ref(&x), &[]).unwrap();
        let replay_grad = w.grad().unwrap();
        assert!(tape.stats().last_static, "the static backward ran");
        let eager = step(&x, &w);
        assert_eq!(bits(&out[0]), bits(&eager));
        assert_eq!(bits(&replay_grad), bits(&w.grad().unwrap()));
    }
}

#[test]
fn the_static_replay_fuses_the_elementwise_run_and_makes_no_nodes() {
    let w = ramp(64, 0.3, 0.1);
    w.set_requires_grad(true).unwrap();
    let tape = capture_step(&ramp(64, 0.7, 0.2), &w);
    tape.run(&[ramp(64, 0.5, 0.0)], &[]).unwrap();
    let st = tape.stats();
    assert!(st.fused_groups >= 1, "{st:?}");
    assert_eq!(st.last_replay_nodes, 0, "{st:?}");
}

#[test]
fn an_op_with_no_replay_rule_fails_the_capture_by_name() {
    begin(&[], &[]).unwrap();
    no_rule("nonzero");
    no_rule("unique");
    let c = end().unwrap();
    let why = c.failure.unwrap();
    assert!(why.contains("`nonzero` has no replay rule"), "{why}");
    assert!(why.contains("also `unique`"), "{why}");
}

#[test]
fn a_second_capture_on_the_same_thread_is_refused() {
    begin(&[], &[]).unwrap();
    let err = begin(&[], &[]).unwrap_err();
    assert!(err.contains("already running"), "{err}");
    assert!(end().is_some());
    assert!(end().is_none());
    assert!(!active());
}

#[test]
fn a_backward_the_tape_cannot_replay_runs_and_fails_the_capture() {
    let x = ramp(4, 1.0, 0.0);
    x.set_requires_grad(true).unwrap();
    begin(std::slice::from_ref(&x), &[]).unwrap();
    let y = op("exp", &[&x], Arc::new(|t| ops::exp(t[0])));
    let s = op("sum", &[&y], Arc::new(|t| ops::sum(t[0], None, false)));
    let req = BackwardRequest {
        roots: vec![s.clone()],
        grads: vec![Tensor::full(s.shape(), 1.0, s.dtype())],
        inputs: None,
        retain_graph: false,
        create_graph: true,
        accumulate: true,
    };
    let mut ran = false;
    record_backward(req, false, |req| {
        ran = true;
        autograd::run_backward(req).map(drop)
    })
    .unwrap();
    let c = end().unwrap();
    assert!(ran);
    assert!(c.failure.unwrap().contains("create_graph=True"));
    assert_eq!(bits(&x.grad().unwrap()), bits(&ops::exp(&x).unwrap()));
}

struct Counter(Arc<AtomicUsize>);

impl HostCall for Counter {
    fn call(&self) -> crate::Result<()> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[test]
fn a_host_call_runs_once_per_replay_in_its_place() {
    let calls = Arc::new(AtomicUsize::new(0));
    let x = ramp(5, 1.0, 0.0);
    begin(std::slice::from_ref(&x), &[]).unwrap();
    let y = op("neg", &[&x], Arc::new(|t| ops::neg(t[0])));
    with(|c| {
        c.entries.push(Entry::step(
            "step",
            Step::Host(Arc::new(Counter(calls.clone()))),
        ))
    });
    let mut c = end().unwrap();
    let outs = vec![c.slot_of(&y)];
    let tape = Tape::build(c, outs, false, 1);
    for k in 1..=3 {
        let x = ramp(5, k as f32, 1.0);
        let out = tape.run(std::slice::from_ref(&x), &[]).unwrap();
        assert_eq!(bits(&out[0]), bits(&ops::neg(&x).unwrap()));
        assert_eq!(calls.load(Ordering::Relaxed), k);
    }
}
