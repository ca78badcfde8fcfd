//! The tape being recorded: its slots (where each tensor comes from on a
//! replay), its entries (an op with its replay rule, a backward, a grad-mode
//! switch, a host call), and the thread's recording state.
//!
//! Every binding that runs an op records through `py::capture::run_op` and
//! its siblings, which call [`record`] while a capture is running. Tensors
//! are told apart by identity: a tensor seen for the first time as an input
//! is a constant of the tape (a parameter, a module buffer) and the replay
//! uses that same tensor, so in-place updates land on it as they do eagerly.
//! Bindings with no replay rule call [`no_rule`], which fails a running
//! capture naming the binding, so a replay never silently skips a call.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use smallvec::SmallVec;

use super::desc::Desc;
use super::graph::{link_graph, Graph};
use crate::autograd::{self, BackwardRequest};
use crate::ops::Scalar;
use crate::tensor::{DType, Tensor};

// Whether this thread captures is `flags::CAPTURE`, a bit of the mode word
// every op binding reads anyway.
thread_local! {
    pub(crate) static STATE: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// True while this thread records a tape (and is not inside a Python step
/// that the tape calls back).
#[inline(always)]
pub(crate) fn active() -> bool {
    crate::flags::any(crate::flags::CAPTURE)
}

pub(crate) fn set_active(on: bool) {
    crate::flags::set(crate::flags::CAPTURE, on);
}

/// Recomputes an op's outputs from its tensor and scalar inputs.
pub(crate) type Rule =
    Arc<dyn Fn(&[&Tensor], &[Scalar]) -> crate::Result<Vec<Tensor>> + Send + Sync>;

/// Where a slot's tensor comes from on each replay.
#[derive(Clone)]
pub(crate) enum Src {
    /// The `i`-th tensor argument of the call.
    Input(usize),
    /// The same tensor every call.
    Const(Tensor),
    /// Written by an entry.
    Produced,
    /// A 0-d tensor made from the `arg`-th number argument (a number passed
    /// where an op wants a tensor).
    Number { arg: usize, dtype: DType },
}

/// A scalar operand: a number argument of the call, or a constant.
#[derive(Clone, Copy)]
pub(crate) enum SIn {
    Arg(usize, Scalar),
    Const(Scalar),
}

impl SIn {
    #[inline]
    pub(crate) fn value(&self) -> Scalar {
        match *self {
            SIn::Arg(_, s) | SIn::Const(s) => s,
        }
    }
}

/// A call the tape makes back into its host (the Python bindings implement
/// it for a Python callable).
pub(crate) trait HostCall: Send + Sync {
    fn call(&self) -> crate::Result<()>;
}

pub(crate) enum Step {
    Op {
        rule: Rule,
        ins: Vec<usize>,
        sins: Vec<SIn>,
        outs: Vec<usize>,
    },
    /// `root.backward(grad)`; afterwards each `(leaf, slot)` pair stores the
    /// leaf's `.grad` in `slot`.
    Backward {
        root: usize,
        grad: Option<usize>,
        retain_graph: bool,
        leaves: Vec<(usize, usize)>,
    },
    GradMode(bool),
    SetGrad {
        t: usize,
        g: Option<usize>,
    },
    /// A call back into the host language with no arguments (a Python
    /// optimizer's `step`).
    Host(Arc<dyn HostCall>),
}

pub(crate) struct Entry {
    pub name: String,
    pub step: Step,
    /// What the op is, for passes over the tape (`Desc::Opaque` for steps
    /// and for ops no pass understands).
    pub desc: Desc,
    /// The autograd nodes the op recorded during capture (`Op` steps only).
    pub graph: Graph,
    /// The op reads the graph its inputs carry (`autograd.grad`), so it
    /// cannot run in a plan that computes the forward without one.
    pub reads_graph: bool,
}

impl Entry {
    pub(crate) fn step(name: &str, step: Step) -> Entry {
        Entry {
            name: name.to_string(),
            step,
            desc: Desc::Opaque,
            graph: Graph::None,
            reads_graph: false,
        }
    }
}

#[derive(Default)]
pub(crate) struct Capture {
    pub srcs: Vec<Src>,
    /// Whether each slot's tensor required grad when it was mapped.
    pub requires_grad: Vec<bool>,
    map: HashMap<usize, usize>,
    /// Every mapped tensor, kept alive so no id is reused during capture.
    keep: Vec<Tensor>,
    pub entries: Vec<Entry>,
    /// Python number arguments by object address -> argument index.
    pub number_args: HashMap<usize, usize>,
    /// Which number arguments an op took directly.
    pub number_seen: Vec<bool>,
    pub failure: Option<String>,
    pub grad_mode_at_end: bool,
    /// Slots made by ops that ran inside a captured `backward` (a custom
    /// Function's backward, a hook): the replay's engine run makes them
    /// again, so the tape holds no entry for them and nothing may read them.
    pub inside_backward: HashMap<usize, String>,
}

impl Capture {
    pub(crate) fn new(inputs: &[Tensor], numbers: &[usize]) -> Capture {
        let mut c = Capture {
            number_seen: vec![false; numbers.len()],
            ..Default::default()
        };
        for (i, t) in inputs.iter().enumerate() {
            let s = c.push(t, Src::Input(i));
            // The same tensor passed twice is one slot; both positions read it.
            let _ = s;
        }
        for (i, &p) in numbers.iter().enumerate() {
            c.number_args.insert(p, i);
        }
        c
    }

    pub(crate) fn push(&mut self, t: &Tensor, src: Src) -> usize {
        let s = self.srcs.len();
        self.srcs.push(src);
        self.requires_grad.push(t.requires_grad());
        self.map.insert(t.id(), s);
        self.keep.push(t.clone());
        s
    }

    /// The slot holding `t`, or a new constant slot for it.
    pub(crate) fn slot_of(&mut self, t: &Tensor) -> usize {
        match self.map.get(&t.id()) {
            Some(&s) => s,
            None => self.push(t, Src::Const(t.clone())),
        }
    }

    /// The slot holding `t`, if the tape has seen it.
    pub(crate) fn lookup(&self, t: &Tensor) -> Option<usize> {
        self.map.get(&t.id()).copied()
    }

    pub(crate) fn produce(&mut self, t: &Tensor) -> usize {
        self.push(t, Src::Produced)
    }

    pub(crate) fn fail(&mut self, why: String) {
        match &mut self.failure {
            None => self.failure = Some(why),
            // Later reasons are listed too, so one run names every op to fix.
            Some(f) if !f.contains(&why) && f.len() < 2000 => {
                f.push_str("; also ");
                f.push_str(&why);
            }
            Some(_) => {}
        }
    }

    /// Tensors the tape has seen that may receive a `.grad` from backward:
    /// inputs, constants, and leaves made inside (`zeros(3, requires_grad=True)`,
    /// `x.detach().requires_grad_()`).
    pub(crate) fn leaf_slots(&self) -> Vec<(usize, Tensor)> {
        let mut v: Vec<(usize, Tensor)> = self
            .map
            .iter()
            .filter_map(|(_, &s)| match &self.srcs[s] {
                Src::Input(_) | Src::Const(_) => Some(s),
                Src::Produced if self.keep[s].requires_grad() && self.keep[s].is_leaf() => Some(s),
                _ => None,
            })
            .map(|s| (s, self.keep[s].clone()))
            .collect();
        v.sort_by_key(|(s, _)| *s);
        v
    }

    pub(crate) fn tensor_at(&self, s: usize) -> &Tensor {
        &self.keep[s]
    }
}

pub(crate) fn with<R>(f: impl FnOnce(&mut Capture) -> R) -> Option<R> {
    STATE.with(|st| st.borrow_mut().as_mut().map(f))
}

/// Marks the capture as failed (the first reason wins).
pub(crate) fn fail(why: String) {
    with(|c| c.fail(why));
}

/// Fails the capture for a call that has no replay rule (`errors::enter`).
#[cold]
pub(crate) fn no_rule(name: &str) {
    fail(format!("`{name}` has no replay rule"));
}

/// Refuses a read of tensor data into Python (`.item()`, `bool(t)`, ...):
/// the value would be baked into the tape.
pub(crate) fn refuse_read(what: &str) {
    if active() {
        fail(format!(
            "`{what}` reads a tensor's value into Python inside the captured function; a replayed tape cannot re-run the Python code that uses it"
        ));
    }
}

/// Appends an op entry. `seq0` is the newest node's sequence number before
/// the op ran (`None` for an in-place write, which no pass rewrites).
pub(crate) fn record(
    name: &str,
    ins: &[&Tensor],
    sins: &[SIn],
    outs: &[Tensor],
    rule: Rule,
    seq0: Option<u64>,
) {
    let (desc, graph) = match seq0 {
        Some(seq0) => (
            Desc::of(name, ins.len(), sins.len()),
            link_graph(ins, outs, seq0),
        ),
        None if outs.iter().any(|o| o.requires_grad()) => {
            (Desc::Opaque, Graph::Unknown("writes in place".into()))
        }
        None => (Desc::Opaque, Graph::None),
    };
    with(|c| {
        let ins: Vec<usize> = ins.iter().map(|t| c.slot_of(t)).collect();
        let outs: Vec<usize> = outs.iter().map(|t| c.produce(t)).collect();
        c.entries.push(Entry {
            name: name.to_string(),
            step: Step::Op {
                rule,
                ins,
                sins: sins.to_vec(),
                outs,
            },
            desc,
            graph,
            reads_graph: false,
        });
    });
}

/// Appends an op entry for a call that ran outside the recording family (a
/// Python op, `py::compile`); `seq0` is the newest node's sequence number
/// before it ran.
pub(crate) fn record_op(name: &str, ins: &[&Tensor], outs: &[Tensor], rule: Rule, seq0: u64) {
    record(name, ins, &[], outs, rule, Some(seq0));
}

/// The number of entries recorded so far.
pub(crate) fn entry_count() -> usize {
    with(|c| c.entries.len()).unwrap_or(0)
}

/// Marks the entry just recorded as one that reads its inputs' graph.
pub(crate) fn mark_dynamic() {
    with(|c| {
        if let Some(e) = c.entries.last_mut() {
            e.reads_graph = true;
        }
    });
}

pub(crate) fn values(sins: &[SIn]) -> smallvec::SmallVec<[Scalar; 2]> {
    sins.iter().map(|s| s.value()).collect()
}

/// Which optional tensor inputs an op was given (a convolution's bias, a
/// norm's weight): the present ones follow the required ones in the entry's
/// inputs, and the rule finds them with [`Opt::get`].
#[derive(Clone, Copy)]
pub(crate) struct Opt {
    required: u8,
    present: u16,
}

impl Opt {
    /// The inputs of an op: `required`, then the present `optional` ones.
    pub(crate) fn inputs<'a>(
        required: &[&'a Tensor],
        optional: &[Option<&'a Tensor>],
    ) -> (SmallVec<[&'a Tensor; 6]>, Opt) {
        let mut ins: SmallVec<[&'a Tensor; 6]> = required.iter().copied().collect();
        let mut present = 0u16;
        for (k, o) in optional.iter().enumerate() {
            if let Some(t) = o {
                present |= 1 << k;
                ins.push(t);
            }
        }
        (
            ins,
            Opt {
                required: required.len() as u8,
                present,
            },
        )
    }

    /// Optional input `k` in the rule's inputs `t`.
    #[inline]
    pub(crate) fn get<'t>(&self, t: &[&'t Tensor], k: usize) -> Option<&'t Tensor> {
        if self.present & (1 << k) == 0 {
            return None;
        }
        let before = (self.present & ((1u16 << k) - 1)).count_ones() as usize;
        Some(t[self.required as usize + before])
    }
}

/// Records a cast autocast made while capturing (`out` is `src` in `dtype`,
/// made after the node `seq0`), so a replay casts its own inputs again.
pub(crate) fn record_cast(src: &Tensor, out: &Tensor, dtype: DType, seq0: u64) {
    record(
        "to",
        &[src],
        &[],
        std::slice::from_ref(out),
        Arc::new(move |t, _| Ok(vec![crate::ops::to_dtype(t[0], dtype)?])),
        Some(seq0),
    );
}

/// Starts recording this thread's calls into a tape. `inputs` are the call's
/// tensor arguments, `numbers` its number arguments (told apart by the
/// address of the host's object).
pub(crate) fn begin(inputs: &[Tensor], numbers: &[usize]) -> Result<(), String> {
    if with(|_| ()).is_some() {
        return Err("ferrograd.compile: a capture is already running on this thread (nested compiled functions are not captured)".into());
    }
    let mut c = Capture::new(inputs, numbers);
    c.grad_mode_at_end = autograd::is_grad_enabled();
    STATE.with(|s| *s.borrow_mut() = Some(c));
    set_active(true);
    Ok(())
}

/// Stops recording and returns what was recorded (`None` when no capture
/// was running).
pub(crate) fn end() -> Option<Capture> {
    set_active(false);
    STATE.with(|s| s.borrow_mut().take())
}

/// `root.backward(grad)` while capturing: `run` runs the engine on `req`,
/// then the step is recorded with the leaves whose `.grad` it set. A
/// backward the tape cannot replay (`inputs=`, `create_graph=True`, several
/// roots) still runs, and fails the capture.
pub(crate) fn record_backward<E>(
    req: BackwardRequest,
    grad_given: bool,
    run: impl FnOnce(BackwardRequest) -> Result<(), E>,
) -> Result<(), E> {
    if req.inputs.is_some() || req.create_graph || req.roots.len() != 1 {
        fail("`backward` with inputs= or create_graph=True has no replay rule".into());
        return run(req);
    }
    let (root, grad) = with(|c| {
        (
            c.slot_of(&req.roots[0]),
            grad_given.then(|| c.slot_of(&req.grads[0])),
        )
    })
    .unwrap_or((0, None));
    let retain_graph = req.retain_graph;
    let start = entry_count();
    run(req)?;
    with(|c| {
        // Whatever the engine called that records (a custom Function's
        // backward, a hook) it calls again on every replay: entries kept for
        // it would compute it twice, the first time from the capture call's
        // incoming gradients.
        for e in c.entries.drain(start..).collect::<Vec<_>>() {
            if let Step::Op { outs, .. } = &e.step {
                c.inside_backward
                    .extend(outs.iter().map(|&s| (s, e.name.clone())));
            }
        }
        let mut leaves = Vec::new();
        for (s, t) in c.leaf_slots() {
            if t.is_leaf() && t.requires_grad() {
                if let Some(g) = t.grad() {
                    leaves.push((s, c.produce(&g)));
                }
            }
        }
        c.entries.push(Entry::step(
            "backward",
            Step::Backward {
                root,
                grad,
                retain_graph,
                leaves,
            },
        ));
    });
    Ok(())
}

/// `set_grad_enabled(on)` while capturing.
pub(crate) fn note_grad_mode(on: bool) {
    with(|c| {
        c.entries
            .push(Entry::step("set_grad_enabled", Step::GradMode(on)))
    });
}

/// `t.grad = g` while capturing.
pub(crate) fn note_set_grad(t: &Tensor, g: Option<&Tensor>) {
    with(|c| {
        let t = c.slot_of(t);
        let g = g.map(|g| c.slot_of(g));
        c.entries
            .push(Entry::step("set_grad", Step::SetGrad { t, g }))
    });
}
