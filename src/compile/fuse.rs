//! Fusion for the static replay: a run of consecutive elementwise entries
//! over one shape and float dtype becomes one fused program
//! (`kernels::fused`), evaluated as one loop over the data forward and one
//! backward, with no tensor for the values that live only inside the run.
//!
//! The forward keeps every register of the program (`Plan::forward_keep`)
//! for the reverse pass, which reads them instead of the saved tensors the
//! entries' nodes would have held. The reverse pass lands each input's
//! gradient as the engine does: seeds (the gradients the run's results got
//! from later entries) first, then the contributions of the run's ops
//! newest first, added one by one after a gradient the input already
//! held. Each fused op computes the expression of its eager kernel and
//! node rule, so a fused replay stays bit-for-bit the engine's.

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::ew::Pool;
use super::replay::resolve;
use super::{Desc, EdgeTo, Entry, Ew, Graph, SIn, Step};
use crate::kernels::fused::{EwOp, FusedFloat, Instr, Plan, Program, Src};
use crate::ops::Scalar;
use crate::tensor::{DType, Element, Shape, Tensor};

/// Instructions per fused program (register indices are 16-bit); a longer
/// run is cut into several programs, one after another.
const MAX_INSTRS: usize = 16_384;
/// A run whose kept registers would exceed this many elements is not fused
/// (its entries run one by one and free their intermediates early).
const MAX_KEPT: usize = 1 << 24;

/// One fused run of entries.
pub(super) struct Group {
    /// The entries, in tape order.
    pub members: Vec<usize>,
    /// The run's entries in reverse mode, as the static plan had them:
    /// what runs instead when a replay cannot take the fused path.
    pub vjps: Vec<super::static_backward::SStep>,
    plan: Plan,
    /// The slot of each program input.
    pub inputs: Vec<usize>,
    /// Each program scalar, resolved per call.
    scalars: Vec<SIn>,
    /// The slot each program output fills.
    pub outputs: Vec<usize>,
    /// Gradient slots of the inputs (wanted ones) and outputs (seeds).
    in_g: Vec<Option<usize>>,
    out_g: Vec<Option<usize>>,
    dtype: DType,
    shape: Shape,
    numel: usize,
    /// Register arenas left by earlier replays, reused.
    arena32: Mutex<Vec<f32>>,
    arena64: Mutex<Vec<f64>>,
}

/// What one replay carries from a group's forward to its reverse pass.
pub(super) enum Kept {
    /// The members ran one by one (an input did not have the shape or
    /// dtype the group was built for): their own VJP steps run too.
    Unfused,
    Fused {
        inputs: SmallVec<[Tensor; 4]>,
        scalars: SmallVec<[f64; 4]>,
        arena: Arena,
    },
}

pub(super) enum Arena {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// The fused op, operands and expected node of an entry, or `None` when
/// the entry cannot join a run.
fn instr_of(e: &Entry) -> Option<(EwOp, Operands, &'static str)> {
    use Ew::*;
    let unary = |ew: Ew| -> Option<(EwOp, &'static str)> {
        Some(match ew {
            Neg => (EwOp::Neg, "NegBackward0"),
            Exp => (EwOp::Exp, "ExpBackward0"),
            Log => (EwOp::Log, "LogBackward0"),
            Sin => (EwOp::Sin, "SinBackward0"),
            Cos => (EwOp::Cos, "CosBackward0"),
            Tanh => (EwOp::Tanh, "TanhBackward0"),
            Sigmoid => (EwOp::Sigmoid, "SigmoidBackward0"),
            Relu => (EwOp::Relu, "ReluBackward0"),
            Sqrt => (EwOp::Sqrt, "SqrtBackward0"),
            Abs => (EwOp::Abs, "AbsBackward0"),
            Reciprocal => (EwOp::Reciprocal, "ReciprocalBackward0"),
            Rsqrt => (EwOp::Rsqrt, "RsqrtBackward0"),
            Expm1 => (EwOp::Expm1, "Expm1Backward0"),
            Log1p => (EwOp::Log1p, "Log1PBackward0"),
            _ => return None,
        })
    };
    Some(match e.desc {
        Desc::Unary(ew) => {
            let (op, node) = unary(ew)?;
            (op, Operands::One, node)
        }
        Desc::Binary(ew) => {
            let (op, node) = match ew {
                Add => (EwOp::Add, "AddBackward0"),
                Sub => (EwOp::Sub, "SubBackward0"),
                Mul => (EwOp::Mul, "MulBackward0"),
                Div => (EwOp::Div, "DivBackward0"),
                _ => return None,
            };
            (op, Operands::Two, node)
        }
        Desc::ScalarRhs(ew) => {
            let (op, node) = match ew {
                Add => (EwOp::Add, "AddBackward0"),
                Sub => (EwOp::Sub, "SubBackward0"),
                Mul => (EwOp::Mul, "MulBackward0"),
                Div => (EwOp::Div, "DivBackward0"),
                Pow => (EwOp::Pow, "PowBackward0"),
                _ => return None,
            };
            (op, Operands::ScalarRhs, node)
        }
        Desc::ScalarLhs(ew) => {
            let (op, node) = match ew {
                Sub => (EwOp::Sub, "RsubBackward1"),
                Pow => (EwOp::Pow, "PowBackward2"),
                _ => return None,
            };
            (op, Operands::ScalarLhs, node)
        }
        _ => return None,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operands {
    One,
    Two,
    ScalarRhs,
    ScalarLhs,
}

/// What the fusion pass needs to know about the tape.
pub(super) struct FuseIn<'a> {
    pub entries: &'a [Entry],
    pub requires_grad: &'a [bool],
    pub meta: &'a dyn Fn(usize) -> (Shape, DType),
    pub in_reach: &'a [bool],
    pub gslot: &'a [Option<usize>],
    /// The call's results, which every run must produce as tensors.
    pub outs: &'a [usize],
    /// Whether the plan has a reverse pass (a forward-only plan runs
    /// everything with grad recording off, so grad mode inside is moot).
    pub backward: bool,
}

/// Whether entry `i` may join a run of `(shape, dtype)`; returns its own
/// shape and dtype.
fn member(f: &FuseIn<'_>, i: usize) -> Option<(Shape, DType)> {
    let e = &f.entries[i];
    let (_, operands, node_name) = instr_of(e)?;
    let Step::Op {
        ins, sins, outs, ..
    } = &e.step
    else {
        return None;
    };
    let n_ins = if operands == Operands::Two { 2 } else { 1 };
    let n_sins = if matches!(operands, Operands::ScalarRhs | Operands::ScalarLhs) {
        1
    } else {
        0
    };
    if ins.len() != n_ins || sins.len() != n_sins || outs.len() != 1 {
        return None;
    }
    let (shape, dtype) = (f.meta)(outs[0]);
    if !matches!(dtype, DType::F32 | DType::F64) {
        return None;
    }
    if ins.iter().any(|&s| (f.meta)(s) != (shape.clone(), dtype)) {
        return None;
    }
    if let Some(s) = sins.first() {
        // The eager scalar ops' one-pass forms, with numbers the fused
        // program converts exactly as they do.
        match s.value() {
            Scalar::Float(_) => {}
            Scalar::Int(v) if v.unsigned_abs() <= 1 << 24 && e.desc != Desc::ScalarRhs(Ew::Pow) => {
            }
            _ => return None,
        }
    }
    // Grad mode was on for the whole op: its result requires grad exactly
    // when an input does (under `no_grad()` a gradient must not flow
    // through it, which the fused reverse pass would let it do).
    let any_rg = ins.iter().any(|&s| f.requires_grad[s]);
    if f.backward && f.requires_grad[outs[0]] != any_rg {
        return None;
    }
    if f.in_reach[i] {
        let Graph::Nodes { links, .. } = &e.graph else {
            return None;
        };
        let [link] = links.as_slice() else {
            return None;
        };
        if link.node.name().as_ref() != node_name {
            return None;
        }
        // One edge into each operand that requires grad (the same tensor
        // given twice may be recorded as two edges to its first position),
        // and no other edge.
        let mut n_in = 0;
        for e in &link.edges {
            match *e {
                EdgeTo::In(j) if j < ins.len() && f.requires_grad[ins[j]] => n_in += 1,
                EdgeTo::None => {}
                _ => return None,
            }
        }
        if n_in != ins.iter().filter(|&&s| f.requires_grad[s]).count() {
            return None;
        }
    }
    Some((shape, dtype))
}

/// Cuts the forward entries `fwd` (tape order) into runs of fusable
/// entries that follow one another on the tape.
pub(super) fn runs(f: &FuseIn<'_>, fwd: &[usize]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut key: Option<(Shape, DType)> = None;
    let mut flush = |cur: &mut Vec<usize>| {
        if cur.len() >= 2 {
            for c in cur.chunks(MAX_INSTRS) {
                if c.len() >= 2 {
                    out.push(c.to_vec());
                }
            }
        }
        cur.clear();
    };
    for (k, &i) in fwd.iter().enumerate() {
        let m = member(f, i);
        let joins = match (&m, &key) {
            (Some(m), Some(kk)) => m == kk && k > 0 && fwd[k - 1] + 1 == i,
            _ => false,
        };
        if !joins {
            flush(&mut cur);
            key = m.clone();
        }
        if m.is_some() {
            cur.push(i);
        }
    }
    flush(&mut cur);
    // Runs whose kept registers would be too large stay unfused.
    out.retain(|r| {
        let (shape, _) = (f.meta)(first_out(f.entries, r[0]));
        r.len().saturating_mul(shape.iter().product::<usize>()) <= MAX_KEPT
    });
    out
}

fn first_out(entries: &[Entry], i: usize) -> usize {
    match &entries[i].step {
        Step::Op { outs, .. } => outs[0],
        _ => unreachable!("a fused member is an op"),
    }
}

/// Builds the program of one run. `used_outside(s)` tells whether a slot
/// the run produces is read by anything else (a later step, a VJP outside
/// the run, the call's results); `filled(s)` whether a gradient slot
/// already holds a gradient when the run's reverse pass starts.
/// The group's VJP steps are added by the caller.
pub(super) fn build(
    f: &FuseIn<'_>,
    members: Vec<usize>,
    used_outside: &dyn Fn(usize) -> bool,
    filled: &dyn Fn(usize) -> bool,
) -> Result<Group, String> {
    let mut inputs: Vec<usize> = Vec::new();
    let mut scalars: Vec<SIn> = Vec::new();
    let mut instrs: Vec<Instr> = Vec::with_capacity(members.len());
    let mut reg_of: std::collections::HashMap<usize, u16> = Default::default();
    let mut produced: Vec<usize> = Vec::with_capacity(members.len());
    let src_of = |s: usize,
                  inputs: &mut Vec<usize>,
                  reg_of: &std::collections::HashMap<usize, u16>|
     -> Src {
        if let Some(&r) = reg_of.get(&s) {
            return Src::Reg(r);
        }
        let k = match inputs.iter().position(|&x| x == s) {
            Some(k) => k,
            None => {
                inputs.push(s);
                inputs.len() - 1
            }
        };
        Src::Input(k as u16)
    };
    let same_sin = |a: &SIn, b: &SIn| match (a, b) {
        (SIn::Arg(i, x), SIn::Arg(j, y)) => {
            i == j && std::mem::discriminant(x) == std::mem::discriminant(y)
        }
        (SIn::Const(x), SIn::Const(y)) => match (x, y) {
            (Scalar::Float(a), Scalar::Float(b)) => a.to_bits() == b.to_bits(),
            (Scalar::Int(a), Scalar::Int(b)) => a == b,
            _ => false,
        },
        _ => false,
    };
    for &i in &members {
        let e = &f.entries[i];
        let (op, operands, _) = instr_of(e).ok_or("not an elementwise entry")?;
        let Step::Op {
            ins, sins, outs, ..
        } = &e.step
        else {
            return Err("not an op".into());
        };
        let mut scalar = |s: &SIn| -> Src {
            let k = match scalars.iter().position(|x| same_sin(x, s)) {
                Some(k) => k,
                None => {
                    scalars.push(*s);
                    scalars.len() - 1
                }
            };
            Src::Scalar(k as u16)
        };
        let ins_src = match operands {
            Operands::One => (src_of(ins[0], &mut inputs, &reg_of), None),
            Operands::Two => (
                src_of(ins[0], &mut inputs, &reg_of),
                Some(src_of(ins[1], &mut inputs, &reg_of)),
            ),
            Operands::ScalarRhs => (src_of(ins[0], &mut inputs, &reg_of), Some(scalar(&sins[0]))),
            Operands::ScalarLhs => (scalar(&sins[0]), Some(src_of(ins[0], &mut inputs, &reg_of))),
        };
        instrs.push(Instr {
            op,
            a: ins_src.0,
            b: ins_src.1,
        });
        reg_of.insert(outs[0], (instrs.len() - 1) as u16);
        produced.push(outs[0]);
    }
    let mut outputs = Vec::new();
    let mut out_regs = Vec::new();
    for (r, &s) in produced.iter().enumerate() {
        if used_outside(s) || f.outs.contains(&s) {
            outputs.push(s);
            out_regs.push(r as u16);
        }
    }
    let prog = Program {
        n_inputs: inputs.len(),
        n_scalars: scalars.len(),
        instrs,
        outputs: out_regs,
    };
    let in_g: Vec<Option<usize>> = inputs.iter().map(|&s| f.gslot[s]).collect();
    let out_g: Vec<Option<usize>> = outputs.iter().map(|&s| f.gslot[s]).collect();
    let want: Vec<bool> = in_g.iter().map(Option::is_some).collect();
    let seeded: Vec<bool> = out_g.iter().map(Option::is_some).collect();
    let acc: Vec<bool> = in_g.iter().map(|g| g.is_some_and(filled)).collect();
    let plan = prog.plan_into(&want, &seeded, &acc)?;
    let (shape, dtype) = (f.meta)(produced[0]);
    Ok(Group {
        members,
        vjps: Vec::new(),
        plan,
        inputs,
        scalars,
        outputs,
        in_g,
        out_g,
        dtype,
        numel: shape.iter().product(),
        shape,
        arena32: Mutex::new(Vec::new()),
        arena64: Mutex::new(Vec::new()),
    })
}

/// A contiguous tensor's elements.
fn elems<T: Element>(t: &Tensor) -> &[T] {
    let v = t.view();
    let s = v
        .as_slice::<T>()
        .expect("a contiguous tensor of the group's dtype");
    // SAFETY: the slice points into the storage, which `t` keeps alive and
    // which does not move; the guard only protects the view's metadata.
    unsafe { std::slice::from_raw_parts(s.as_ptr(), s.len()) }
}

/// A tensor's buffer to write, when nothing else can observe it.
#[allow(clippy::mut_from_ref)]
fn elems_mut<T: Element>(t: &Tensor) -> &mut [T] {
    let v = t.view();
    // SAFETY: callers pass a tensor that is new or exclusive (no other
    // handle, contiguous from offset 0), so nothing else reads or writes it.
    unsafe { std::slice::from_raw_parts_mut(v.ptr::<T>(), v.numel()) }
}

impl Group {
    pub(super) fn has_vjp(&self) -> bool {
        !self.vjps.is_empty()
    }

    /// The forward of the run: fills the output slots and returns what the
    /// reverse pass needs, or `Kept::Unfused` when an input does not fit
    /// (the caller then runs the members one by one).
    pub(super) fn forward(
        &self,
        slots: &mut [Option<Tensor>],
        numbers: &[f64],
        pool: &mut Pool,
    ) -> crate::Result<Kept> {
        let mut ins: SmallVec<[Tensor; 4]> = SmallVec::with_capacity(self.inputs.len());
        for &s in &self.inputs {
            let t = super::replay::slot(slots, s)?;
            if t.dtype() != self.dtype || t.shape() != self.shape {
                return Ok(Kept::Unfused);
            }
            ins.push(t.contiguous_data());
        }
        let scalars: SmallVec<[f64; 4]> = self
            .scalars
            .iter()
            .map(|s| resolve(s, numbers).to_f64())
            .collect();
        let outs: SmallVec<[Tensor; 4]> = self
            .outputs
            .iter()
            .map(|_| pool.take(self.dtype, &self.shape))
            .collect();
        let arena = match self.dtype {
            DType::F32 => Arena::F32(self.run_forward::<f32>(&ins, &scalars, &outs, &self.arena32)),
            _ => Arena::F64(self.run_forward::<f64>(&ins, &scalars, &outs, &self.arena64)),
        };
        for (&s, t) in self.outputs.iter().zip(outs) {
            slots[s] = Some(t);
        }
        Ok(Kept::Fused {
            inputs: ins,
            scalars,
            arena,
        })
    }

    fn run_forward<T: FusedFloat + Element>(
        &self,
        ins: &[Tensor],
        scalars: &[f64],
        outs: &[Tensor],
        cache: &Mutex<Vec<T>>,
    ) -> Vec<T> {
        let xs: SmallVec<[&[T]; 4]> = ins.iter().map(elems::<T>).collect();
        let mut os: SmallVec<[&mut [T]; 4]> = outs.iter().map(elems_mut::<T>).collect();
        if !self.has_vjp() {
            self.plan.forward(&xs, scalars, &mut os);
            return Vec::new();
        }
        let mut arena = std::mem::take(&mut *cache.lock());
        let need = self.plan.kept_len(self.numel);
        if arena.len() < need {
            arena.resize(need, T::ZERO);
        }
        self.plan.forward_keep(&xs, scalars, &mut os, &mut arena);
        arena
    }

    /// The reverse pass of the run from the kept registers: takes the
    /// seeds from the outputs' gradient slots and lands the inputs'
    /// gradients in theirs.
    pub(super) fn reverse(
        &self,
        kept: Kept,
        slots: &mut [Option<Tensor>],
        pool: &mut Pool,
    ) -> crate::Result<()> {
        let Kept::Fused {
            inputs,
            scalars,
            arena,
        } = kept
        else {
            unreachable!("an unfused group runs its members' VJP steps")
        };
        // Seeds, contiguous in the group's dtype, or the one value of a
        // seed broadcast from a single element (`sum`'s gradient), which
        // the reverse pass reads from a filled buffer instead of a tensor.
        let mut seeds: SmallVec<[Option<Tensor>; 4]> = SmallVec::new();
        let mut fills: SmallVec<[Option<Tensor>; 4]> = SmallVec::new();
        for g in &self.out_g {
            match g.and_then(|g| slots[g].take()) {
                Some(t) if self.is_broadcast(&t) => {
                    fills.push(Some(t));
                    seeds.push(None);
                }
                t => {
                    fills.push(None);
                    seeds.push(t.map(|t| self.fit(t)).transpose()?);
                }
            }
        }
        // The inputs' gradient buffers: one already there is added to (in
        // place when nothing else holds it), otherwise a fresh one.
        let mut acc: SmallVec<[bool; 4]> = SmallVec::new();
        let mut bufs: SmallVec<[Option<Tensor>; 4]> = SmallVec::new();
        for g in &self.in_g {
            let Some(g) = *g else {
                acc.push(false);
                bufs.push(None);
                continue;
            };
            match slots[g].take() {
                Some(prev) => {
                    let prev = self.fit(prev)?;
                    let buf = if prev.is_exclusive() {
                        prev
                    } else {
                        let b = pool.take(self.dtype, &self.shape);
                        crate::dispatch!(self.dtype, T => elems_mut::<T>(&b).copy_from_slice(elems::<T>(&prev)));
                        b
                    };
                    acc.push(true);
                    bufs.push(Some(buf));
                }
                None => {
                    acc.push(false);
                    bufs.push(Some(pool.take(self.dtype, &self.shape)));
                }
            }
        }
        let seeded: SmallVec<[bool; 4]> = seeds
            .iter()
            .zip(&fills)
            .map(|(s, f)| s.is_some() || f.is_some())
            .collect();
        let other;
        let plan = if self.plan.seeded() == seeded.as_slice()
            && self.plan.accumulate() == acc.as_slice()
        {
            &self.plan
        } else {
            let want: SmallVec<[bool; 4]> = self.in_g.iter().map(Option::is_some).collect();
            other = self
                .plan
                .program()
                .plan_into(&want, &seeded, &acc)
                .map_err(crate::Error::Runtime)?;
            &other
        };
        match arena {
            Arena::F32(mut a) => {
                Self::run_reverse::<f32>(plan, &inputs, &scalars, &mut a, &seeds, &fills, &bufs);
                *self.arena32.lock() = a;
            }
            Arena::F64(mut a) => {
                Self::run_reverse::<f64>(plan, &inputs, &scalars, &mut a, &seeds, &fills, &bufs);
                *self.arena64.lock() = a;
            }
        }
        for (g, b) in self.in_g.iter().zip(bufs) {
            if let (Some(g), Some(b)) = (g, b) {
                slots[*g] = Some(b);
            }
        }
        drop(inputs);
        for s in seeds.into_iter().flatten() {
            pool.put(s);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn run_reverse<T: FusedFloat + Element>(
        plan: &Plan,
        inputs: &[Tensor],
        scalars: &[f64],
        arena: &mut [T],
        seeds: &[Option<Tensor>],
        fills: &[Option<Tensor>],
        bufs: &[Option<Tensor>],
    ) {
        let xs: SmallVec<[&[T]; 4]> = inputs.iter().map(elems::<T>).collect();
        let n = xs.first().map_or(0, |x| x.len());
        let filled: SmallVec<[Option<Vec<T>>; 4]> = fills
            .iter()
            .map(|f| {
                f.as_ref().map(|t| {
                    // SAFETY: the view's offset is in bounds of its storage,
                    // whose dtype `is_broadcast` checked.
                    vec![unsafe { *t.view().ptr::<T>() }; n]
                })
            })
            .collect();
        let sd: SmallVec<[Option<&[T]>; 4]> = seeds
            .iter()
            .zip(&filled)
            .map(|(s, f)| match f {
                Some(f) => Some(f.as_slice()),
                None => s.as_ref().map(elems::<T>),
            })
            .collect();
        let mut gs: SmallVec<[Option<&mut [T]>; 4]> = bufs
            .iter()
            .map(|b| b.as_ref().map(elems_mut::<T>))
            .collect();
        plan.reverse_kept(&xs, scalars, arena, &sd, &mut gs);
    }

    /// Whether `t` has the group's dtype and shape with every element the
    /// one stored element (an expanded scalar).
    fn is_broadcast(&self, t: &Tensor) -> bool {
        let v = t.view();
        v.dtype() == self.dtype && v.shape == self.shape && v.strides.iter().all(|&s| s == 0)
    }

    /// `t` as a contiguous tensor of the group's dtype and shape (a
    /// gradient arriving from a broadcast rule may be an expanded view).
    fn fit(&self, t: Tensor) -> crate::Result<Tensor> {
        if t.shape() != self.shape {
            return Err(crate::Error::runtime(
                "compiled tape: a fused group's gradient has the wrong shape",
            ));
        }
        let t = if t.dtype() != self.dtype {
            crate::ops::to_dtype(&t, self.dtype)?
        } else {
            t
        };
        Ok(t.contiguous_data())
    }
}
