//! The static backward of a compiled tape: when every op that the recorded
//! `backward()` reaches is understood, the replay runs the forward ops with
//! grad recording off (no autograd nodes) and then the backward itself as
//! entries of the tape, with no engine walk.
//!
//! Each forward entry's VJP is the rule of the node(s) its op recorded
//! during capture (`tape`'s `Graph`), called on the replay's own tensors:
//! the saved tensors a rule reads are the entry's inputs and outputs (or
//! `linear`'s `w.t()`, remade from the weight), so the backward computes
//! exactly what the engine would, with the same kernels. Gradients are
//! accumulated in the engine's order: nodes run newest first (reverse tape
//! order), contributions to one tensor are summed in arrival order, and
//! each leaf's `.grad` is written as the engine writes it (the gradient
//! itself, or a copy, when `.grad` is None; added in place otherwise).
//! The result is bit-for-bit the engine's.

use std::sync::atomic::{AtomicUsize, Ordering};

use smallvec::SmallVec;

use super::ew::Pool;
use super::fuse::{self as fuse, FuseIn, Group, Kept};
use super::replay::{exec_step, slot};
use super::vjp::{fast_forward, run_vjp};
use super::{EdgeTo, Entry, Graph, SavedRef, Src, Step};
use crate::autograd;
use crate::ops;
use crate::tensor::Tensor;

pub(super) enum SStep {
    /// A recorded op run with grad recording off.
    Fwd(usize),
    /// A recorded step run as the dynamic replay runs it.
    Plain(usize),
    /// The root's gradient: `grad` (converted to the root's dtype) or ones.
    Seed {
        root: usize,
        grad: Option<usize>,
        g: usize,
    },
    /// The VJP of entry `entry`: gradient slots of its inputs and outputs.
    Vjp {
        entry: usize,
        ins_g: SmallVec<[Option<usize>; 4]>,
        outs_g: SmallVec<[Option<usize>; 2]>,
    },
    /// The forward of fused group `g` (`fuse.rs`).
    FusedFwd(usize),
    /// The reverse pass of fused group `g`.
    FusedVjp(usize),
    /// Accumulates gradient slot `g` into leaf `leaf`'s `.grad`.
    WriteGrad {
        leaf: usize,
        g: usize,
    },
    /// The backward step's `(leaf, slot)` pairs: later entries read `.grad`.
    ReadGrads(usize),
    Mode(bool),
}

pub(super) struct Static {
    pub steps: Vec<SStep>,
    pub release: Vec<Vec<usize>>,
    pub n_grads: usize,
    /// Leaf slots that receive a `.grad` (checked for hooks on each replay).
    pub leaves: Vec<usize>,
    /// Constant slots with whether they required grad, their shape and
    /// dtype at capture: a replay after one of them changed (`requires_grad_()`,
    /// `.data = ...` of another shape) takes the dynamic path, which runs
    /// the ops on the tensor as it now is.
    pub const_rg: Vec<(usize, bool, crate::tensor::Shape, crate::tensor::DType)>,
    pub n_vjp: usize,
    pub n_fwd: usize,
    /// Entries the last replay ran on the elementwise fast path (forward,
    /// VJP), for `stats()`.
    pub fast_fwd: AtomicUsize,
    pub fast_vjp: AtomicUsize,
    /// Runs of elementwise entries fused into one program each.
    pub groups: Vec<Group>,
    /// Groups the last replay ran fused.
    pub fused_last: AtomicUsize,
}

/// What the static plan needs to know about the capture.
pub(super) struct BuildIn<'a> {
    pub srcs: &'a [Src],
    pub entries: &'a [Entry],
    pub requires_grad: &'a [bool],
    pub is_leaf: &'a dyn Fn(usize) -> bool,
    pub outs: &'a [usize],
    pub grad_mode: bool,
    /// A slot's shape and dtype at capture (guards keep them on replays).
    pub meta: &'a dyn Fn(usize) -> (crate::tensor::Shape, crate::tensor::DType),
}

/// The static plan of a tape, or why it has none.
pub(super) fn build(b: &BuildIn<'_>) -> Result<Static, String> {
    let entries = b.entries;
    if let Some(e) = entries.iter().find(|e| e.reads_graph) {
        return Err(format!("`{}` reads the graph of its inputs", e.name));
    }
    let bwd: Vec<usize> = (0..entries.len())
        .filter(|&i| matches!(entries[i].step, Step::Backward { .. }))
        .collect();
    let bi = match bwd.as_slice() {
        [i] => *i,
        [] => return build_forward_only(b),
        _ => return Err("the tape has several backward() steps".into()),
    };
    let Step::Backward {
        root,
        grad,
        retain_graph,
        ..
    } = &entries[bi].step
    else {
        unreachable!()
    };
    if *retain_graph {
        return Err("backward(retain_graph=True)".into());
    }
    if !matches!(b.srcs[*root], Src::Produced) || !b.requires_grad[*root] {
        return Err("backward() is called on a tensor not computed inside".into());
    }
    let n = b.srcs.len();
    // Which slots need a gradient, walking the entries before backward in
    // reverse from the root.
    let mut need = vec![false; n];
    need[*root] = true;
    let mut in_reach = vec![false; entries.len()];
    for i in (0..bi).rev() {
        let e = &entries[i];
        match &e.step {
            Step::Op { ins, outs, .. } => {
                if !outs.iter().any(|&o| need[o]) {
                    continue;
                }
                in_reach[i] = true;
                let links = match &e.graph {
                    Graph::Nodes { links, .. } => links,
                    Graph::Unknown(why) => return Err(format!("`{}` {why}", e.name)),
                    Graph::None => return Err(format!("`{}` recorded no autograd node", e.name)),
                };
                for l in links {
                    let name = l.node.name();
                    if crate::autograd::node_traits::traits(&name)
                        & crate::autograd::node_traits::STATIC_VJP
                        == 0
                    {
                        return Err(format!(
                            "`{}` records {name}, which has no static VJP rule",
                            e.name
                        ));
                    }
                    if let Some(h) = l.node.hooks_snapshot() {
                        if !h.pre.is_empty()
                            || !h.retain.is_empty()
                            || !h.node_pre.is_empty()
                            || !h.node_post.is_empty()
                        {
                            return Err(format!(
                                "a hook or retain_grad() on the result of `{}`",
                                e.name
                            ));
                        }
                    }
                    for edge in &l.edges {
                        if let EdgeTo::In(k) = edge {
                            let s = ins[*k];
                            if b.requires_grad[s] {
                                need[s] = true;
                            }
                        }
                    }
                }
            }
            Step::Host(_) => {
                return Err(format!(
                    "`{}` is called from Python before backward()",
                    e.name
                ))
            }
            _ => {}
        }
    }
    let mut leaves = Vec::new();
    for (s, &needed) in need.iter().enumerate() {
        if needed && matches!(b.srcs[s], Src::Input(_) | Src::Const(_)) {
            if !(b.is_leaf)(s) {
                return Err(
                    "a gradient flows into a tensor made outside with its own graph".into(),
                );
            }
            leaves.push(s);
        }
    }
    for &o in b.outs {
        if b.requires_grad[o] && matches!(b.srcs[o], Src::Produced) && !need[o] {
            return Err("the function returns a tensor that requires grad and that its backward() does not differentiate".into());
        }
    }
    // Ops after backward that take a pre-backward result with a graph would
    // see it without one.
    let produced_before: Vec<bool> = {
        let mut v = vec![false; n];
        for e in &entries[..bi] {
            if let Step::Op { outs, .. } = &e.step {
                outs.iter().for_each(|&o| v[o] = true);
            }
        }
        v
    };
    for e in &entries[bi + 1..] {
        if let Step::Op { ins, .. } = &e.step {
            if ins
                .iter()
                .any(|&s| produced_before[s] && b.requires_grad[s])
            {
                return Err(format!(
                    "`{}` after backward() uses a result that requires grad",
                    e.name
                ));
            }
        }
    }

    // Gradient slots follow the tape's own slots.
    let mut gslot = vec![None; n];
    let mut n_grads = 0;
    for s in 0..n {
        if need[s] {
            gslot[s] = Some(n + n_grads);
            n_grads += 1;
        }
    }
    let mut steps = Vec::new();
    let mut mode = b.grad_mode;
    let (mut n_vjp, mut n_fwd) = (0, 0);
    for (i, e) in entries[..bi].iter().enumerate() {
        match &e.step {
            Step::Op { .. } => {
                steps.push(SStep::Fwd(i));
                n_fwd += 1;
            }
            Step::GradMode(on) => mode = *on,
            _ => steps.push(SStep::Plain(i)),
        }
    }
    steps.push(SStep::Seed {
        root: *root,
        grad: *grad,
        g: gslot[*root].expect("the root needs a gradient"),
    });
    for i in (0..bi).rev() {
        if !in_reach[i] {
            continue;
        }
        let Step::Op { ins, outs, .. } = &entries[i].step else {
            continue;
        };
        steps.push(SStep::Vjp {
            entry: i,
            ins_g: ins.iter().map(|&s| gslot[s]).collect(),
            outs_g: outs.iter().map(|&s| gslot[s]).collect(),
        });
        n_vjp += 1;
    }
    for &l in &leaves {
        steps.push(SStep::WriteGrad {
            leaf: l,
            g: gslot[l].expect("a leaf that needs a gradient"),
        });
    }
    steps.push(SStep::ReadGrads(bi));
    steps.push(SStep::Mode(mode));
    for i in bi + 1..entries.len() {
        steps.push(SStep::Plain(i));
    }

    let (steps, groups) = fuse_runs(b, steps, &in_reach, &gslot, n_grads);
    Ok(assemble(b, steps, groups, n_grads, leaves, n_vjp, n_fwd))
}

/// The plan from its steps: each tape slot is dropped after its last use
/// (gradient slots are taken by the step that consumes them).
fn assemble(
    b: &BuildIn<'_>,
    steps: Vec<SStep>,
    groups: Vec<Group>,
    n_grads: usize,
    leaves: Vec<usize>,
    n_vjp: usize,
    n_fwd: usize,
) -> Static {
    let n = b.srcs.len();
    let mut last = vec![usize::MAX; n];
    for (k, st) in steps.iter().enumerate() {
        touch_step(b.entries, &groups, st, &mut |s: usize| last[s] = k);
    }
    let mut release = vec![Vec::new(); steps.len()];
    for (s, &l) in last.iter().enumerate() {
        if l != usize::MAX && !b.outs.contains(&s) && !matches!(b.srcs[s], Src::Const(_)) {
            release[l].push(s);
        }
    }
    let const_rg = (0..n)
        .filter(|&s| matches!(b.srcs[s], Src::Const(_)))
        .map(|s| {
            let (shape, dt) = (b.meta)(s);
            (s, b.requires_grad[s], shape, dt)
        })
        .collect();
    Static {
        steps,
        release,
        n_grads,
        leaves,
        const_rg,
        n_vjp,
        n_fwd,
        fast_fwd: AtomicUsize::new(0),
        fast_vjp: AtomicUsize::new(0),
        groups,
        fused_last: AtomicUsize::new(0),
    }
}

/// The plan of a tape without `backward()` that built no graph (inference,
/// or `no_grad()`): its ops run with grad recording off, so runs of
/// elementwise ops can be fused.
fn build_forward_only(b: &BuildIn<'_>) -> Result<Static, String> {
    let entries = b.entries;
    let n = b.srcs.len();
    if (0..n).any(|s| matches!(b.srcs[s], Src::Produced) && b.requires_grad[s]) {
        return Err("the tape has no backward() step and builds a graph".into());
    }
    let mut steps = Vec::new();
    let mut mode = b.grad_mode;
    let mut n_fwd = 0;
    for (i, e) in entries.iter().enumerate() {
        match &e.step {
            Step::Op { .. } => {
                steps.push(SStep::Fwd(i));
                n_fwd += 1;
            }
            Step::GradMode(on) => mode = *on,
            Step::Host(_) => {
                return Err(format!("`{}` is called from Python", e.name));
            }
            _ => steps.push(SStep::Plain(i)),
        }
    }
    steps.push(SStep::Mode(mode));
    let (steps, groups) = fuse_runs(b, steps, &vec![false; entries.len()], &vec![None; n], 0);
    Ok(assemble(b, steps, groups, 0, Vec::new(), 0, n_fwd))
}

/// Calls `touch` on every tape slot step `st` reads or writes (a VJP step:
/// the tensors its nodes saved).
fn touch_step(entries: &[Entry], groups: &[Group], st: &SStep, touch: &mut dyn FnMut(usize)) {
    match st {
        SStep::FusedFwd(g) => {
            for &i in &groups[*g].members {
                super::replay::touched(&entries[i], touch);
            }
        }
        SStep::FusedVjp(g) => {
            for v in &groups[*g].vjps {
                touch_step(entries, groups, v, touch);
            }
        }
        SStep::Fwd(i) | SStep::Plain(i) | SStep::ReadGrads(i) => {
            super::replay::touched(&entries[*i], touch)
        }
        SStep::Seed { root, grad, .. } => {
            touch(*root);
            if let Some(g) = grad {
                touch(*g);
            }
        }
        SStep::Vjp { entry, .. } => {
            let e = &entries[*entry];
            if let (Step::Op { ins, outs, .. }, Graph::Nodes { links, .. }) = (&e.step, &e.graph) {
                for l in links {
                    for r in l.saved.iter().flatten() {
                        match *r {
                            SavedRef::In(i) | SavedRef::TOf(i) => touch(ins[i]),
                            SavedRef::Out(j) => touch(outs[j]),
                        }
                    }
                }
            }
        }
        SStep::WriteGrad { leaf, .. } => touch(*leaf),
        SStep::Mode(_) => {}
    }
}

/// Replaces each run of fusable forward entries (and their VJP steps) by
/// one fused group's steps.
fn fuse_runs(
    b: &BuildIn<'_>,
    steps: Vec<SStep>,
    in_reach: &[bool],
    gslot: &[Option<usize>],
    n_grads: usize,
) -> (Vec<SStep>, Vec<Group>) {
    let entries = b.entries;
    let f = FuseIn {
        entries,
        requires_grad: b.requires_grad,
        meta: b.meta,
        in_reach,
        gslot,
        outs: b.outs,
        backward: n_grads > 0,
    };
    let fwd: Vec<usize> = steps
        .iter()
        .filter_map(|s| match s {
            SStep::Fwd(i) => Some(*i),
            _ => None,
        })
        .collect();
    let runs = fuse::runs(&f, &fwd);
    if runs.is_empty() {
        return (steps, Vec::new());
    }
    let mut run_of = vec![usize::MAX; entries.len()];
    for (r, m) in runs.iter().enumerate() {
        m.iter().for_each(|&i| run_of[i] = r);
    }
    // How many steps touch each slot, and which gradient slots hold a
    // gradient when each run's reverse pass starts.
    let n = b.srcs.len();
    let mut total = vec![0u32; n];
    for st in &steps {
        touch_step(entries, &[], st, &mut |s| total[s] += 1);
    }
    let mut filled = vec![false; n + n_grads];
    let mut filled_at: Vec<Option<Vec<bool>>> = vec![None; runs.len()];
    for st in &steps {
        match st {
            SStep::Seed { g, .. } => filled[*g] = true,
            SStep::Vjp { entry, ins_g, .. } => {
                let r = run_of[*entry];
                if r != usize::MAX && filled_at[r].is_none() {
                    filled_at[r] = Some(filled.clone());
                }
                if let Graph::Nodes { links, .. } = &entries[*entry].graph {
                    for e in links.iter().flat_map(|l| l.edges.iter()) {
                        if let EdgeTo::In(k) = e {
                            if let Some(g) = ins_g[*k] {
                                filled[g] = true;
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // Steps of each run's own entries touching each slot.
    let mut mine: Vec<std::collections::HashMap<usize, u32>> =
        (0..runs.len()).map(|_| Default::default()).collect();
    for st in &steps {
        let r = match st {
            SStep::Fwd(i) => run_of[*i],
            SStep::Vjp { entry, .. } => run_of[*entry],
            _ => continue,
        };
        if r != usize::MAX {
            touch_step(entries, &[], st, &mut |s| {
                *mine[r].entry(s).or_default() += 1
            });
        }
    }
    // A run the kernel refuses keeps its entries' own steps.
    let mut group_of = vec![usize::MAX; runs.len()];
    let mut groups = Vec::new();
    for (r, members) in runs.iter().enumerate() {
        let held = filled_at[r].take().unwrap_or_default();
        let m = &mine[r];
        let g = fuse::build(
            &f,
            members.clone(),
            &|s| total[s] > m.get(&s).copied().unwrap_or(0),
            &|g| held.get(g).copied().unwrap_or(false),
        );
        if let Ok(g) = g {
            group_of[r] = groups.len();
            groups.push(g);
        }
    }
    let mut rest = Vec::with_capacity(steps.len());
    for st in steps {
        let r = match &st {
            SStep::Fwd(i) => run_of[*i],
            SStep::Vjp { entry, .. } => run_of[*entry],
            _ => usize::MAX,
        };
        let g = if r == usize::MAX {
            usize::MAX
        } else {
            group_of[r]
        };
        if g == usize::MAX {
            rest.push(st);
            continue;
        }
        match st {
            SStep::Fwd(i) => {
                if groups[g].members[0] == i {
                    rest.push(SStep::FusedFwd(g));
                }
            }
            st => {
                if groups[g].vjps.is_empty() {
                    rest.push(SStep::FusedVjp(g));
                }
                groups[g].vjps.push(st);
            }
        }
    }
    (rest, groups)
}

impl Static {
    /// Whether this replay may take the static path: nothing changed since
    /// capture that the engine would treat differently.
    pub(super) fn usable(&self, srcs: &[Src], slots: &[Option<Tensor>]) -> bool {
        if crate::anomaly::is_enabled() {
            return false;
        }
        for (s, rg, shape, dt) in &self.const_rg {
            if let Src::Const(t) = &srcs[*s] {
                if t.requires_grad() != *rg || t.dtype() != *dt || t.shape() != *shape {
                    return false;
                }
            }
        }
        self.leaves.iter().all(|&l| match &slots[l] {
            Some(t) => t.meta().hooks.is_empty(),
            None => false,
        })
    }

    pub(super) fn run(
        &self,
        entries: &[Entry],
        mut slots: Vec<Option<Tensor>>,
        numbers: &[f64],
        outs: &[usize],
    ) -> crate::Result<Vec<Tensor>> {
        autograd::set_grad_enabled(false);
        let mut pool = Pool::new();
        let (mut nf, mut nv, mut nfused) = (0, 0, 0);
        let mut kept: Vec<Option<Kept>> = (0..self.groups.len()).map(|_| None).collect();
        for (st, rel) in self.steps.iter().zip(&self.release) {
            match st {
                SStep::Fwd(i) => {
                    let e = &entries[*i];
                    if fast_forward(e, &mut slots, numbers, &mut pool)? {
                        nf += 1;
                    } else {
                        exec_step(e, &mut slots, numbers)?
                    }
                }
                SStep::Plain(i) => exec_step(&entries[*i], &mut slots, numbers)?,
                SStep::Mode(on) => autograd::set_grad_enabled(*on),
                SStep::Seed { root, grad, g } => {
                    let r = slot(&slots, *root)?;
                    let seed = match grad {
                        Some(gs) => {
                            let gt = slot(&slots, *gs)?;
                            let (rs, gsh) = (r.shape(), gt.shape());
                            if rs != gsh {
                                return Err(crate::Error::runtime(format!(
                                    "Mismatch in shape: grad_output[0] has a shape of {} and output[0] has a shape of {}.",
                                    crate::tensor::fmt_shape(&gsh),
                                    crate::tensor::fmt_shape(&rs)
                                )));
                            }
                            if gt.dtype() != r.dtype() {
                                ops::to_dtype(gt, r.dtype())?
                            } else {
                                gt.clone()
                            }
                        }
                        None => Tensor::full(r.shape(), 1.0, r.dtype()),
                    };
                    slots[*g] = Some(seed);
                }
                SStep::Vjp { .. } => {
                    if run_vjp(st, entries, &mut slots, numbers, &mut pool)? {
                        nv += 1;
                    }
                }
                SStep::FusedFwd(g) => {
                    let grp = &self.groups[*g];
                    let k = grp.forward(&mut slots, numbers, &mut pool)?;
                    if matches!(k, Kept::Unfused) {
                        for &i in &grp.members {
                            let e = &entries[i];
                            if !fast_forward(e, &mut slots, numbers, &mut pool)? {
                                exec_step(e, &mut slots, numbers)?
                            }
                        }
                    } else {
                        nfused += 1;
                    }
                    if grp.has_vjp() {
                        kept[*g] = Some(k);
                    }
                }
                SStep::FusedVjp(g) => {
                    let grp = &self.groups[*g];
                    match kept[*g].take() {
                        Some(k @ Kept::Fused { .. }) => grp.reverse(k, &mut slots, &mut pool)?,
                        Some(Kept::Unfused) => {
                            for v in &grp.vjps {
                                run_vjp(v, entries, &mut slots, numbers, &mut pool)?;
                            }
                        }
                        None => {
                            return Err(crate::Error::runtime(
                                "compiled tape: a fused group's reverse pass before its forward",
                            ))
                        }
                    }
                }
                SStep::WriteGrad { leaf, g } => {
                    if let Some(g) = slots[*g].take() {
                        crate::autograd::accumulate_grad(slot(&slots, *leaf)?, g, false)?;
                    }
                }
                SStep::ReadGrads(i) => {
                    if let Step::Backward { leaves, .. } = &entries[*i].step {
                        for &(leaf, gs) in leaves {
                            let g = slot(&slots, leaf)?.grad().ok_or_else(|| {
                                crate::Error::Runtime(
                                    "compiled tape: backward left a captured gradient unset".into(),
                                )
                            })?;
                            slots[gs] = Some(g);
                        }
                    }
                }
            }
            for &s in rel {
                if let Some(t) = slots[s].take() {
                    pool.put(t);
                }
            }
        }
        self.fast_fwd.store(nf, Ordering::Relaxed);
        self.fast_vjp.store(nv, Ordering::Relaxed);
        self.fused_last.store(nfused, Ordering::Relaxed);
        outs.iter().map(|&s| slot(&slots, s).cloned()).collect()
    }
}
