//! Which dtypes each op family takes: one fact per family, read by the ops
//! (to refuse the others with PyTorch's words) and meant for the op
//! registry. The families and their members are listed in ARCHITECTURE.md.

use crate::error::{Error, Result};
use crate::tensor::DType;

/// A set of dtypes an op accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtypes {
    /// All ten: moves (copy, `cat`, indexing, gather/scatter, `where`,
    /// views), comparisons, `add`/`mul`, `sum`/`prod`/`cumsum`, `max`/`min`,
    /// `sort`/`topk`, `abs`, `clamp`, `matmul` (bool refused by the matrix
    /// products, as in PyTorch).
    All,
    /// Integers and floats, not bool: `neg`, `sub`, `sign`, `remainder`,
    /// `fmod`, `floor_divide`, `relu`, `matmul`.
    Numeric,
    /// float16, bfloat16, float32, float64: what must produce floats from
    /// floats (`exp`, `sin`, `mean`, `var`, `softmax`, convolution, pooling,
    /// norms, losses, attention, RNNs, `frac`, the random samplers).
    /// Integer inputs to the elementwise float functions are promoted to the
    /// default dtype first, as in PyTorch, rather than refused.
    Floating,
    /// Integers and bool: the bitwise ops (`&`, `|`, `^`, `~`).
    Integral,
    /// Anything that can require grad: the floating dtypes (autograd,
    /// `requires_grad=True`, optimizers).
    Differentiable,
}

impl Dtypes {
    pub fn accepts(self, dt: DType) -> bool {
        match self {
            Dtypes::All => true,
            Dtypes::Numeric => dt != DType::Bool,
            Dtypes::Floating | Dtypes::Differentiable => dt.is_float(),
            Dtypes::Integral => !dt.is_float(),
        }
    }

    /// PyTorch's refusal of a dtype an op does not take:
    /// `"bitwise_and_cpu" not implemented for 'Float'`.
    pub fn check(self, kernel: &str, dt: DType) -> Result<()> {
        if self.accepts(dt) {
            Ok(())
        } else {
            Err(not_implemented(kernel, dt))
        }
    }

    /// The dtypes of the set, in [`DType::index`] order.
    pub fn members(self) -> Vec<DType> {
        crate::tensor::ALL_DTYPES
            .into_iter()
            .filter(|&d| self.accepts(d))
            .collect()
    }
}

/// The op families and the dtypes each takes: the registry's source (the
/// table in ARCHITECTURE.md is this one).
pub const FAMILIES: &[(&str, Dtypes, &[&str])] = &[
    (
        "moves and selection",
        Dtypes::All,
        &[
            "to",
            "clone",
            "contiguous",
            "view",
            "reshape",
            "cat",
            "stack",
            "index",
            "index_put",
            "gather",
            "scatter",
            "index_select",
            "where",
            "flip",
            "sort",
            "argsort",
            "topk",
            "max",
            "min",
            "amax",
            "amin",
            "clamp",
            "maximum",
            "minimum",
        ],
    ),
    (
        "comparisons and logical",
        Dtypes::All,
        &[
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "isclose",
            "logical_and",
            "logical_or",
            "logical_xor",
            "logical_not",
            "isnan",
            "isinf",
            "isfinite",
        ],
    ),
    ("arithmetic", Dtypes::All, &["add", "mul", "pow"]),
    (
        "arithmetic without bool",
        Dtypes::Numeric,
        &[
            "sub",
            "neg",
            "remainder",
            "fmod",
            "floor_divide",
            "sign",
            "relu",
        ],
    ),
    ("sums", Dtypes::All, &["sum", "prod", "cumsum"]),
    (
        "matrix products",
        Dtypes::Numeric,
        &["mm", "bmm", "matmul", "mv", "dot", "addmm", "linear"],
    ),
    (
        "bitwise",
        Dtypes::Integral,
        &["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"],
    ),
    (
        "float functions (integers promote)",
        Dtypes::Floating,
        &["exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "div"],
    ),
    (
        "float only",
        Dtypes::Floating,
        &[
            "mean",
            "var",
            "std",
            "norm",
            "frac",
            "conv1d",
            "conv2d",
            "max_pool2d",
            "avg_pool2d",
            "batch_norm",
            "layer_norm",
            "softmax",
            "log_softmax",
            "nll_loss",
            "scaled_dot_product_attention",
            "lstm",
            "gru",
            "embedding",
            "rand",
            "randn",
            "normal_",
            "uniform_",
        ],
    ),
    (
        "differentiable",
        Dtypes::Differentiable,
        &["requires_grad_", "optimizer step"],
    ),
];

/// `"<kernel>" not implemented for '<Half>'`, PyTorch's text.
pub fn not_implemented(kernel: &str, dt: DType) -> Error {
    Error::runtime(format!(
        "\"{kernel}\" not implemented for '{}'",
        dt.scalar_name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_partition_as_documented() {
        assert_eq!(Dtypes::All.members().len(), 10);
        assert_eq!(Dtypes::Numeric.members().len(), 9);
        assert_eq!(Dtypes::Floating.members().len(), 4);
        assert_eq!(Dtypes::Integral.members().len(), 6);
        let e = Dtypes::Integral
            .check("bitwise_and_cpu", DType::F16)
            .unwrap_err();
        assert!(e
            .to_string()
            .ends_with("\"bitwise_and_cpu\" not implemented for 'Half'"));
    }
}
