//! What a recorded op is, for the passes over a tape (fusion, the static
//! backward's fast paths): read from the binding's op name and its operand
//! kinds when the entry is recorded.

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
