//! Recording a tape for `ferrograd.compile` (the tape itself and its replay
//! are in `compile.rs`).
//!
//! Every binding that runs an op enters core code through the recording
//! family here ([`run_op`], [`run`], [`run_tuple`], [`run_inplace`]): it
//! computes the result exactly as eagerly and, while a thread captures,
//! appends an entry naming the op's input and output slots and a rule that
//! recomputes it from new slot values (the closure the binding ran, with its
//! non-tensor arguments moved in). Tensors are told apart by identity: a
//! tensor seen for the first time as an input is a constant of the tape (a
//! parameter, a module buffer) and the replay uses that same tensor, so
//! in-place updates land on it as they do eagerly.
//!
//! Bindings with no replay rule enter through `errors::enter` (or
//! `enter_py`), which fails a running capture naming the binding, so a
//! replay never silently skips a call.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;

use smallvec::SmallVec;

use crate::autograd::{self, Edge, NodeRef};
use crate::ops::Scalar;
use crate::profiler;
use crate::py::errors;
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
    /// A Python callable run with no arguments (an optimizer's `step`).
    PyCall(Py<PyAny>),
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

/// An elementwise operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ew {
    Neg,
    Exp,
    Log,
    Sin,
    Cos,
    Tanh,
    Sigmoid,
    Relu,
    Sqrt,
    Abs,
    Reciprocal,
    Square,
    Rsqrt,
    Expm1,
    Log1p,
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
}

/// A typed description of a recorded op. The bindings name their ops
/// consistently (`run_op`'s `name`), so the description is read from the
/// name and the operand kinds where the entry is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Desc {
    Opaque,
    /// `op(ins[0])`.
    Unary(Ew),
    /// `ins[0] op ins[1]`, broadcast.
    Binary(Ew),
    /// `ins[0] op sins[0]`.
    ScalarRhs(Ew),
    /// `sins[0] op ins[0]` (`2 - x`, `2 / x`, `2 ** x`).
    ScalarLhs(Ew),
    /// `sum`/`mean`, over everything or over dimensions.
    Sum,
    Mean,
    /// `matmul`, `mm`, `linear`.
    Product,
    /// A view or copy that moves elements: reshape/view/expand/t/transpose/
    /// permute/squeeze/unsqueeze/flatten, basic indexing, chunk/split/unbind.
    Shape,
    /// `cat`, `stack`.
    Join,
}

impl Desc {
    pub(crate) fn of(name: &str, n_ins: usize, n_sins: usize) -> Desc {
        let (base, reflected) = match name {
            "radd" | "rsub" | "rmul" | "rdiv" | "rpow" => (&name[1..], true),
            n => (n, false),
        };
        let ew = match base {
            "neg" => Some(Ew::Neg),
            "exp" => Some(Ew::Exp),
            "log" => Some(Ew::Log),
            "sin" => Some(Ew::Sin),
            "cos" => Some(Ew::Cos),
            "tanh" => Some(Ew::Tanh),
            "sigmoid" => Some(Ew::Sigmoid),
            "relu" => Some(Ew::Relu),
            "sqrt" => Some(Ew::Sqrt),
            "abs" => Some(Ew::Abs),
            "reciprocal" => Some(Ew::Reciprocal),
            "square" => Some(Ew::Square),
            "rsqrt" => Some(Ew::Rsqrt),
            "expm1" => Some(Ew::Expm1),
            "log1p" => Some(Ew::Log1p),
            "add" => Some(Ew::Add),
            "sub" => Some(Ew::Sub),
            "mul" => Some(Ew::Mul),
            "div" => Some(Ew::Div),
            "pow" => Some(Ew::Pow),
            "maximum" => Some(Ew::Maximum),
            "minimum" => Some(Ew::Minimum),
            _ => None,
        };
        if let Some(e) = ew {
            let binary = matches!(
                e,
                Ew::Add | Ew::Sub | Ew::Mul | Ew::Div | Ew::Pow | Ew::Maximum | Ew::Minimum
            );
            return match (binary, n_ins, n_sins) {
                (false, 1, 0) if !reflected => Desc::Unary(e),
                // A reflected op given a tensor was recorded with its operands swapped.
                (true, 2, 0) => Desc::Binary(e),
                // `2 + x` and `2 * x` run as `x + 2` and `x * 2` (`add_scalar`, `mul_scalar`).
                (true, 1, 1) if reflected && !matches!(e, Ew::Add | Ew::Mul) => Desc::ScalarLhs(e),
                (true, 1, 1) => Desc::ScalarRhs(e),
                _ => Desc::Opaque,
            };
        }
        match name {
            "sum" => Desc::Sum,
            "mean" => Desc::Mean,
            "matmul" | "mm" | "linear" => Desc::Product,
            "reshape_i" | "view" | "expand_view" | "broadcast_to" | "t" | "transpose"
            | "permute" | "squeeze" | "unsqueeze" | "flatten" | "unflatten" | "select"
            | "index" | "chunk" | "split" | "unbind" | "narrow" => Desc::Shape,
            "cat" | "stack" => Desc::Join,
            _ => Desc::Opaque,
        }
    }
}

/// Where a gradient leaving one of an entry's nodes goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum EdgeTo {
    /// Nowhere (the input needs no gradient).
    None,
    /// The entry's tensor input `i`.
    In(usize),
    /// Output `nr` of the entry's node `k` (a node made inside the op).
    Inner(usize, u32),
}

/// Where a node's saved tensor comes from on a replay.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SavedRef {
    In(usize),
    /// The entry's output `j`.
    Out(usize),
    /// `ins[i].t()`, made inside the op (`linear`'s transposed weight).
    TOf(usize),
}

/// One autograd node an entry's op made during capture: its rule is the
/// entry's VJP on replay, called on the replay's tensors.
#[derive(Clone)]
pub(crate) struct Link {
    pub node: NodeRef,
    pub edges: SmallVec<[EdgeTo; 2]>,
    pub saved: SmallVec<[Option<SavedRef>; 2]>,
}

/// The nodes an entry recorded during capture.
#[derive(Clone, Default)]
pub(crate) enum Graph {
    /// None (no input required grad, or grad mode was off).
    #[default]
    None,
    /// Newest first (the engine's order). `outs[j]` is where the entry's
    /// output `j` gets its gradient from: `(node, output_nr)`, or `None`
    /// when the output does not require grad.
    Nodes {
        links: Vec<Link>,
        outs: SmallVec<[Option<(usize, u32)>; 2]>,
    },
    /// Something the static backward cannot express (the reason).
    Unknown(String),
}

fn same_node(a: &(NodeRef, u32), n: &NodeRef, nr: u32) -> bool {
    a.0.ptr_eq(n) && a.1 == nr
}

/// Reads the nodes made by an op that started when the newest node had
/// sequence `seq0`.
fn link_graph(ins: &[&Tensor], outs: &[Tensor], seq0: u64) -> Graph {
    let seq1 = autograd::current_seq();
    let out_fns: Vec<Option<(NodeRef, u32)>> = outs.iter().map(|o| o.grad_fn()).collect();
    if seq1 == seq0 {
        return if outs.iter().any(|o| o.requires_grad()) {
            Graph::Unknown("returns a tensor that requires grad without recording a node".into())
        } else {
            Graph::None
        };
    }
    let fresh = |n: &NodeRef| n.seq > seq0 && n.seq <= seq1;
    let mut nodes: Vec<NodeRef> = Vec::new();
    let mut stack: Vec<NodeRef> = out_fns
        .iter()
        .flatten()
        .filter(|(n, _)| fresh(n))
        .map(|(n, _)| n.clone())
        .collect();
    while let Some(n) = stack.pop() {
        if nodes.iter().any(|m| m.ptr_eq(&n)) {
            continue;
        }
        for e in n.edges.iter() {
            if let Edge::Node(c, _) = e {
                if fresh(c) {
                    stack.push(c.clone());
                }
            }
        }
        nodes.push(n);
    }
    if nodes.len() as u64 != seq1 - seq0 {
        return Graph::Unknown("records nodes that are not on its outputs' graph".into());
    }
    nodes.sort_by_key(|n| std::cmp::Reverse(n.seq));
    let pos = |n: &NodeRef| nodes.iter().position(|m| m.ptr_eq(n));
    let in_fns: Vec<Option<(NodeRef, u32)>> = ins.iter().map(|t| t.grad_fn()).collect();
    let mut links = Vec::with_capacity(nodes.len());
    for n in &nodes {
        let mut edges = SmallVec::new();
        for e in n.edges.iter() {
            edges.push(match e {
                Edge::None => EdgeTo::None,
                Edge::Node(c, nr) => match pos(c) {
                    Some(k) => EdgeTo::Inner(k, *nr),
                    None => match in_fns
                        .iter()
                        .position(|f| f.as_ref().is_some_and(|f| same_node(f, c, *nr)))
                    {
                        Some(i) => EdgeTo::In(i),
                        None => return Graph::Unknown("sends a gradient past its inputs".into()),
                    },
                },
                Edge::Leaf(t) => match ins.iter().position(|i| i.id() == t.id()) {
                    Some(i) => EdgeTo::In(i),
                    None => {
                        return Graph::Unknown("sends a gradient to a leaf it was not given".into())
                    }
                },
            });
        }
        let Some(layout) = n.saved_layout() else {
            return Graph::Unknown(
                "a saved tensor is held by a saved_tensors_hooks pack hook".into(),
            );
        };
        let mut saved = SmallVec::new();
        for s in layout {
            saved.push(match s {
                None => None,
                Some((_, Some(nr))) => {
                    match out_fns
                        .iter()
                        .position(|f| f.as_ref().is_some_and(|f| same_node(f, n, nr)))
                    {
                        Some(j) => Some(SavedRef::Out(j)),
                        None => return Graph::Unknown("saves an intermediate output".into()),
                    }
                }
                Some((t, None)) => match ins.iter().position(|i| i.id() == t.id()) {
                    Some(i) => Some(SavedRef::In(i)),
                    None => {
                        // `linear` saves `w.t()`, the output of its own TBackward0 node.
                        let tof = t.grad_fn().and_then(|(m, _)| {
                            let k = pos(&m)?;
                            (m.name() == "TBackward0").then_some(k)
                        });
                        match tof.map(|k| (k, n.edges.len())) {
                            Some((k, _)) => match nodes[k].edges.first() {
                                Some(Edge::Leaf(w)) => {
                                    match ins.iter().position(|i| i.id() == w.id()) {
                                        Some(i) => Some(SavedRef::TOf(i)),
                                        None => {
                                            return Graph::Unknown(
                                                "saves an intermediate tensor".into(),
                                            )
                                        }
                                    }
                                }
                                Some(Edge::Node(c, nr)) => match in_fns
                                    .iter()
                                    .position(|f| f.as_ref().is_some_and(|f| same_node(f, c, *nr)))
                                {
                                    Some(i) => Some(SavedRef::TOf(i)),
                                    None => {
                                        return Graph::Unknown(
                                            "saves an intermediate tensor".into(),
                                        )
                                    }
                                },
                                _ => return Graph::Unknown("saves an intermediate tensor".into()),
                            },
                            None => return Graph::Unknown("saves an intermediate tensor".into()),
                        }
                    }
                },
            });
        }
        links.push(Link {
            node: n.clone(),
            edges,
            saved,
        });
    }
    let mut out_map = SmallVec::new();
    for (o, f) in outs.iter().zip(&out_fns) {
        out_map.push(match f {
            Some((n, nr)) => match pos(n) {
                Some(k) => Some((k, *nr)),
                None => {
                    return Graph::Unknown("returns a tensor whose node it did not make".into())
                }
            },
            None if o.requires_grad() => {
                return Graph::Unknown("returns a leaf that requires grad".into())
            }
            None => None,
        });
    }
    Graph::Nodes {
        links,
        outs: out_map,
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

    fn push(&mut self, t: &Tensor, src: Src) -> usize {
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

    fn fail(&mut self, why: String) {
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

/// The scalar operand `obj` (already converted to `s`): a number argument of
/// the captured call when it is one, else a constant.
#[inline]
pub(crate) fn scalar_in(obj: &Bound<'_, PyAny>, s: Scalar) -> SIn {
    if !active() {
        return SIn::Const(s);
    }
    let key = obj.as_ptr() as usize;
    with(|c| match c.number_args.get(&key).copied() {
        Some(i) => {
            c.number_seen[i] = true;
            SIn::Arg(i, s)
        }
        None => SIn::Const(s),
    })
    .unwrap_or(SIn::Const(s))
}

/// A number argument turned into the 0-d tensor `t` (by `to_tensor_like`)
/// becomes a slot refilled from the argument on each replay.
pub(crate) fn note_number_tensor(obj: &Bound<'_, PyAny>, t: &Tensor) {
    if !active() {
        return;
    }
    let key = obj.as_ptr() as usize;
    with(|c| {
        if let Some(i) = c.number_args.get(&key).copied() {
            c.number_seen[i] = true;
            c.push(
                t,
                Src::Number {
                    arg: i,
                    dtype: t.dtype(),
                },
            );
        }
    });
}

/// Appends an op entry. `seq0` is the newest node's sequence number before
/// the op ran (`None` for an in-place write, which no pass rewrites).
fn record(
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
/// Python op, `compile.rs`); `seq0` is the newest node's sequence number
/// before it ran.
pub(crate) fn record_op(name: &str, ins: &[&Tensor], outs: &[Tensor], rule: Rule, seq0: u64) {
    record(name, ins, &[], outs, rule, Some(seq0));
}

/// The number of entries recorded so far.
pub(crate) fn entry_count() -> usize {
    with(|c| c.entries.len()).unwrap_or(0)
}

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

/// Marks the entry just recorded as one that reads its inputs' graph.
pub(crate) fn mark_dynamic() {
    with(|c| {
        if let Some(e) = c.entries.last_mut() {
            e.reads_graph = true;
        }
    });
}

fn values(sins: &[SIn]) -> smallvec::SmallVec<[Scalar; 2]> {
    sins.iter().map(|s| s.value()).collect()
}

/// What an op binding's core call returns: one tensor, several, a pair, or
/// several of which some may be absent (gradients nobody asked for). The
/// entry records the present ones, in order, as its outputs; the replay rule
/// returns them in the same order.
pub(crate) trait Outs: Send + Sized + 'static {
    /// The tensors to record (a clone of each handle).
    fn tensors(&self) -> Vec<Tensor>;
    /// The tensors, consumed, for the replay rule.
    fn into_tensors(self) -> Vec<Tensor>;
}

impl Outs for Tensor {
    fn tensors(&self) -> Vec<Tensor> {
        vec![self.clone()]
    }
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self]
    }
}

impl Outs for Vec<Tensor> {
    fn tensors(&self) -> Vec<Tensor> {
        self.clone()
    }
    fn into_tensors(self) -> Vec<Tensor> {
        self
    }
}

impl Outs for (Tensor, Tensor) {
    fn tensors(&self) -> Vec<Tensor> {
        vec![self.0.clone(), self.1.clone()]
    }
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.0, self.1]
    }
}

impl Outs for Vec<Option<Tensor>> {
    fn tensors(&self) -> Vec<Tensor> {
        self.iter().flatten().cloned().collect()
    }
    fn into_tensors(self) -> Vec<Tensor> {
        self.into_iter().flatten().collect()
    }
}

impl<const N: usize> Outs for [Option<Tensor>; N] {
    fn tensors(&self) -> Vec<Tensor> {
        self.iter().flatten().cloned().collect()
    }
    fn into_tensors(self) -> Vec<Tensor> {
        self.into_iter().flatten().collect()
    }
}

/// Runs `f` as `errors::enter` does (GIL released for big work, panics
/// caught), then reads the mode word once: with no capture and no deferred
/// recording error, which is every eager call, the result is returned
/// straight away. A capture is never switched on or off inside core code, so
/// reading its bit after the call is as good as before it. An open profile
/// (`ferrograd.profiler`) times the call as one op event.
#[inline(always)]
fn call<T: Send>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> (errors::Caught<T>, u32) {
    let r = profiler::timed(
        || name.into(),
        profiler::Kind::Op,
        || ins.iter().map(|t| t.shape().to_vec()).collect(),
        || errors::call(py, work, f),
    );
    (r, crate::flags::get())
}

const SLOW: u32 = crate::flags::CAPTURE | crate::flags::DEFERRED;

/// Runs an op (`f` on its tensor inputs `ins` and scalar operands `sins`) as
/// `errors::enter` does; while capturing, also records it with `f` as its
/// replay rule. `f` takes everything it reads through its arguments or moves
/// it in: a tensor captured by the closure would be read as the capture
/// call's value on every replay.
#[inline(always)]
pub(crate) fn run<R, F>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    f: F,
) -> PyResult<R>
where
    R: Outs,
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<R> + Send + Sync + 'static,
{
    let vals = values(sins);
    // The newest node before the op ran: what the op recorded is newer.
    let seq0 = autograd::current_seq();
    let (r, word) = call(py, work, name, ins, || f(ins, &vals));
    if word & SLOW == 0 {
        return errors::finish_clear(r);
    }
    record_result(name, ins, sins, r, word, seq0, f)
}

#[inline(never)]
fn record_result<R, F>(
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    r: errors::Caught<R>,
    word: u32,
    seq0: u64,
    f: F,
) -> PyResult<R>
where
    R: Outs,
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<R> + Send + Sync + 'static,
{
    let out = errors::finish(r)?;
    if word & crate::flags::CAPTURE != 0 {
        record(
            name,
            ins,
            sins,
            &out.tensors(),
            Arc::new(move |t, s| f(t, s).map(Outs::into_tensors)),
            Some(seq0),
        );
    }
    Ok(out)
}

/// [`run`] for an op with one result, wrapped for Python.
#[inline]
pub(crate) fn run_op<F>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    f: F,
) -> PyResult<Py<PyAny>>
where
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<Tensor> + Send + Sync + 'static,
{
    crate::py::tensor::wrap(py, run(py, work, name, ins, sins, f)?)
}

/// [`run`] for an op with several results, returned as a Python tuple.
#[inline]
pub(crate) fn run_tuple<F>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    f: F,
) -> PyResult<Py<PyAny>>
where
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<Vec<Tensor>> + Send + Sync + 'static,
{
    crate::py::tensor::tensor_tuple(py, run(py, work, name, ins, sins, f)?)
}

/// [`run`] for an op with several results, returned unwrapped.
#[inline]
pub(crate) fn run_multi<F>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    f: F,
) -> PyResult<Vec<Tensor>>
where
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<Vec<Tensor>> + Send + Sync + 'static,
{
    run(py, work, name, ins, sins, f)
}

/// [`run`] for an in-place write into `ins[0]`.
pub(crate) fn run_inplace<F>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    f: F,
) -> PyResult<()>
where
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<()> + Send + Sync + 'static,
{
    let vals = values(sins);
    let (r, word) = call(py, work, name, ins, || f(ins, &vals));
    if word & SLOW == 0 {
        return errors::finish_clear(r);
    }
    errors::finish(r)?;
    if word & crate::flags::CAPTURE != 0 {
        let dst = ins[0].clone();
        record(
            name,
            ins,
            sins,
            std::slice::from_ref(&dst),
            Arc::new(move |t, s| {
                f(t, s)?;
                Ok(vec![t[0].clone()])
            }),
            None,
        );
    }
    Ok(())
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

/// Runs a call whose effect is outside any tensor (seeding a generator) as
/// [`run`] runs an op; while capturing, records it so each replay makes it
/// again at the same point.
pub(crate) fn run_effect<F>(py: Python<'_>, name: &'static str, f: F) -> PyResult<()>
where
    F: Fn() -> crate::Result<()> + Send + Sync + 'static,
{
    run::<Vec<Tensor>, _>(py, 0, name, &[], &[], move |_, _| {
        f()?;
        Ok(Vec::new())
    })
    .map(drop)
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
