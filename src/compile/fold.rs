//! In-place ops composed of several recorded ops (written in Python, ending
//! in `ops::apply_inplace`): the members are folded into one in-place entry.

use std::collections::HashMap;
use std::sync::Arc;

use smallvec::SmallVec;

use super::desc::Desc;
use super::graph::Graph;
use super::tape::{with, Entry, Rule, SIn, Step};
use crate::ops::Scalar;
use crate::tensor::Tensor;

/// Where a folded entry's operand comes from: the folded entry's input `k`,
/// or the result of an earlier member.
#[derive(Clone, Copy)]
enum Local {
    In(usize),
    Made(usize),
}

struct Member {
    rule: Rule,
    ins: Vec<Local>,
    /// Indices into the folded entry's scalar operands.
    sins: Vec<usize>,
    outs: Vec<usize>,
}

/// Folds the op entries recorded since `start`, which computed `result`,
/// and the write of `result` into `dst` (`ops::apply_inplace`, for an
/// in-place op composed in Python) into one in-place entry. Its rule runs
/// the members inside `apply_inplace` on the replay's tensors, so the write
/// sees the members' nodes as the eager one did. A member that is not an op
/// fails the capture.
pub(crate) fn fold_inplace(name: &'static str, start: usize, dst: &Tensor, result: &Tensor) {
    with(|c| {
        let members = c.entries.split_off(start.min(c.entries.len()));
        if members.iter().any(|e| !matches!(e.step, Step::Op { .. })) {
            c.fail(format!(
                "`{name}` computes its value with a step that is not an op"
            ));
            return;
        }
        // Slots from outside the members become the folded entry's inputs,
        // `dst` first; slots the members make are locals.
        let mut outside: Vec<usize> = vec![c.slot_of(dst)];
        let mut made: HashMap<usize, usize> = HashMap::new();
        let mut sins_all: Vec<SIn> = Vec::new();
        let mut folded: Vec<Member> = Vec::new();
        for e in members {
            let Step::Op {
                rule,
                ins,
                sins,
                outs,
            } = e.step
            else {
                unreachable!()
            };
            let ins = ins.iter().map(|&s| local(s, &mut outside, &made)).collect();
            let base = sins_all.len();
            sins_all.extend(sins.iter().copied());
            let outs = outs
                .iter()
                .map(|&s| {
                    let k = made.len();
                    made.insert(s, k);
                    k
                })
                .collect();
            folded.push(Member {
                rule,
                ins,
                sins: (base..sins_all.len()).collect(),
                outs,
            });
        }
        let r = match c.lookup(result) {
            Some(s) => local(s, &mut outside, &made),
            None => {
                let s = c.slot_of(result);
                local(s, &mut outside, &made)
            }
        };
        let n_made = made.len();
        let rule: Rule = Arc::new(move |t, s| {
            let _op = crate::tensor::write_op(name);
            crate::ops::apply_inplace(t[0], || {
                let mut loc: Vec<Option<Tensor>> = vec![None; n_made];
                let get = |l: Local, loc: &[Option<Tensor>]| -> crate::Result<Tensor> {
                    match l {
                        Local::In(k) => Ok(t[k].clone()),
                        Local::Made(k) => loc[k].clone().ok_or_else(|| {
                            crate::Error::Runtime("compiled tape: folded slot is empty".into())
                        }),
                    }
                };
                for m in &folded {
                    let ins: Vec<Tensor> = m
                        .ins
                        .iter()
                        .map(|&l| get(l, &loc))
                        .collect::<crate::Result<_>>()?;
                    let refs: SmallVec<[&Tensor; 4]> = ins.iter().collect();
                    let ss: SmallVec<[Scalar; 2]> = m.sins.iter().map(|&i| s[i]).collect();
                    for (&o, v) in m.outs.iter().zip((m.rule)(&refs, &ss)?) {
                        loc[o] = Some(v);
                    }
                }
                get(r, &loc)
            })?;
            Ok(vec![t[0].clone()])
        });
        let ins: Vec<usize> = outside;
        let graph = if dst.requires_grad() {
            Graph::Unknown("writes in place".into())
        } else {
            Graph::None
        };
        let outs = vec![c.produce(dst)];
        c.entries.push(Entry {
            name: name.to_string(),
            step: Step::Op {
                rule,
                ins,
                sins: sins_all,
                outs,
            },
            desc: Desc::Opaque,
            graph,
            reads_graph: false,
        });
    });
}

/// A folded member's operand `s`: made by an earlier member, or an input of
/// the folded entry (added to `outside` when new).
fn local(s: usize, outside: &mut Vec<usize>, made: &HashMap<usize, usize>) -> Local {
    match made.get(&s) {
        Some(&k) => Local::Made(k),
        None => Local::In(match outside.iter().position(|&o| o == s) {
            Some(k) => k,
            None => {
                outside.push(s);
                outside.len() - 1
            }
        }),
    }
}
