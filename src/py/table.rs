//! The machinery of the op table (`ops_table.rs`): one line per regular op
//! expands to its `Tensor` method, its `ferrograd.` function, its in-place
//! `_` variant and its registration, all entering the core through
//! `capture::run_op` (one GIL policy, one error mapping, recorded for
//! `ferrograd.compile`). candle's `unary_op!` and PyTorch's
//! `derivatives.yaml` are the models. `tools/gen_stub.py`
//! reads the same lines to write `_C.pyi`, so the table's syntax is fixed:
//!
//! ```text
//! <kind> <name>(<arg>?) [<surfaces>] = <op path>, "<docstring>";
//! ```
//!
//! Kinds (what the op takes, and so the signatures):
//! - `unary`: `op(&Tensor)`; `x.name()`, `name(input)`.
//! - `binary`: `op(&Tensor, &Tensor)`; the method's `<arg>` must be a
//!   Tensor, the function's operands may be tensors, numbers or data
//!   (`name(input, <arg>)`, a number first when the other is a tensor).
//! - `binary_like`: as `binary`, but the method also converts numbers and data.
//! - `product`: a `binary` matrix product, whose work is the product's size.
//!
//! Every module function dispatches a non-Tensor argument whose type defines
//! `__ferrograd_function__` to it (`dispatch.rs`).
//!
//! Surfaces: `method`, `function`, and `inplace(name_)` (unary only: the
//! result written into `self` by `ops::apply_inplace_map`, so the op must be
//! one elementwise map of its input).

/// Expands the table: see the module documentation.
macro_rules! op_table {
    ( $( $kind:ident $name:ident ( $($arg:ident)? ) [ $($surf:tt)* ] = $op:path , $doc:literal ; )* ) => {
        $( op_table!(@methods $kind $name ($($arg)?) [ $($surf)* ] $op, $doc); )*

        /// The module functions of the table, named as in Python.
        mod fns {
            #[allow(unused_imports)]
            use super::*;
            $( op_table!(@functions $kind $name ($($arg)?) [ $($surf)* ] $op, $doc); )*
        }

        /// Adds the table's module functions to `ferrograd._C`.
        pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( op_table!(@register m $name [ $($surf)* ]); )*
            Ok(())
        }
    };

    // ----- Tensor methods: one `#[pymethods]` block per surface ------------------------
    (@methods $kind:ident $name:ident ($($arg:ident)?) [] $op:path, $doc:literal) => {};
    (@methods $kind:ident $name:ident ($($arg:ident)?) [method $($rest:tt)*] $op:path, $doc:literal) => {
        op_table!(@method $kind $name ($($arg)?) $op, $doc);
        op_table!(@methods $kind $name ($($arg)?) [$($rest)*] $op, $doc);
    };
    (@methods $kind:ident $name:ident ($($arg:ident)?) [function $($rest:tt)*] $op:path, $doc:literal) => {
        op_table!(@methods $kind $name ($($arg)?) [$($rest)*] $op, $doc);
    };
    (@methods unary $name:ident () [inplace($iname:ident) $($rest:tt)*] $op:path, $doc:literal) => {
        #[pymethods]
        impl PyTensor {
            #[doc = concat!("In-place version of `", stringify!($name), "()`: ", $doc)]
            pub(crate) fn $iname(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
                let a = &slf.get().t;
                let _op = crate::tensor::write_op(stringify!($iname));
                $crate::py::capture::run_inplace(slf.py(), a.numel(), stringify!($iname), &[a], &[], |t, _| {
                    ops::apply_inplace_map(t[0], &[], || $op(t[0]))
                })?;
                Ok(slf.clone().into_any().unbind())
            }
        }
        op_table!(@methods unary $name () [$($rest)*] $op, $doc);
    };

    (@method unary $name:ident () $op:path, $doc:literal) => {
        #[pymethods]
        impl PyTensor {
            #[doc = $doc]
            pub(crate) fn $name(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                let a = &self.t;
                autocast!(stringify!($name), a);
                $crate::py::capture::run_op(py, a.numel(), stringify!($name), &[a], &[], |t, _| $op(t[0]))
            }
        }
    };
    (@method binary $name:ident ($arg:ident) $op:path, $doc:literal) => {
        #[pymethods]
        impl PyTensor {
            #[doc = $doc]
            pub(crate) fn $name(&self, py: Python<'_>, $arg: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
                let (a, b) = (&self.t, &$arg.get().t);
                $crate::py::capture::run_op(py, work(&[a, b]), stringify!($name), &[a, b], &[], |t, _| $op(t[0], t[1]))
            }
        }
    };
    (@method product $name:ident ($arg:ident) $op:path, $doc:literal) => {
        #[pymethods]
        impl PyTensor {
            #[doc = $doc]
            pub(crate) fn $name(&self, py: Python<'_>, $arg: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
                let (a, b) = (&self.t, &$arg.get().t);
                autocast!(stringify!($name), a, b);
                $crate::py::capture::run_op(py, product_work(a, b), stringify!($name), &[a, b], &[], |t, _| $op(t[0], t[1]))
            }
        }
    };
    (@method binary_like $name:ident ($arg:ident) $op:path, $doc:literal) => {
        #[pymethods]
        impl PyTensor {
            #[doc = $doc]
            pub(crate) fn $name(&self, py: Python<'_>, $arg: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                let a = &self.t;
                let b = to_tensor_like($arg, Some(a))?;
                $crate::py::capture::run_op(py, work(&[a, &b]), stringify!($name), &[a, &b], &[], |t, _| $op(t[0], t[1]))
            }
        }
    };

    // ----- module functions ------------------------------------------------------------
    (@functions $kind:ident $name:ident ($($arg:ident)?) [] $op:path, $doc:literal) => {};
    (@functions $kind:ident $name:ident ($($arg:ident)?) [function $($rest:tt)*] $op:path, $doc:literal) => {
        op_table!(@function $kind $name ($($arg)?) $op, $doc);
    };
    (@functions $kind:ident $name:ident ($($arg:ident)?) [$other:tt $($rest:tt)*] $op:path, $doc:literal) => {
        op_table!(@functions $kind $name ($($arg)?) [$($rest)*] $op, $doc);
    };

    (@function unary $name:ident () $op:path, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        pub fn $name(py: Python<'_>, input: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
            dispatching!(py, stringify!($name), (input), {
                let a = &$crate::py::dispatch::tensor_arg(input, stringify!($name), "input", 1)?.get().t;
                autocast!(stringify!($name), a);
                $crate::py::capture::run_op(py, a.numel(), stringify!($name), &[a], &[], |t, _| $op(t[0]))
            })
        }
    };
    (@function product $name:ident ($arg:ident) $op:path, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        pub fn $name(
            py: Python<'_>,
            input: &Bound<'_, PyAny>,
            $arg: &Bound<'_, PyAny>,
        ) -> PyResult<Py<PyAny>> {
            dispatching!(py, stringify!($name), (input, $arg), {
                let a = lhs(input, $arg)?;
                let b = to_tensor_like($arg, Some(&a))?;
                autocast!(stringify!($name), a, b);
                $crate::py::capture::run_op(py, product_work(&a, &b), stringify!($name), &[&a, &b], &[], |t, _| $op(t[0], t[1]))
            })
        }
    };
    (@function $kind:ident $name:ident ($arg:ident) $op:path, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        pub fn $name(
            py: Python<'_>,
            input: &Bound<'_, PyAny>,
            $arg: &Bound<'_, PyAny>,
        ) -> PyResult<Py<PyAny>> {
            dispatching!(py, stringify!($name), (input, $arg), {
                let a = lhs(input, $arg)?;
                let b = to_tensor_like($arg, Some(&a))?;
                $crate::py::capture::run_op(py, work(&[&a, &b]), stringify!($name), &[&a, &b], &[], |t, _| $op(t[0], t[1]))
            })
        }
    };

    // ----- registration ------------------------------------------------------------------
    (@register $m:ident $name:ident []) => {};
    (@register $m:ident $name:ident [function $($rest:tt)*]) => {
        $m.add_function(wrap_pyfunction!(fns::$name, $m)?)?;
    };
    (@register $m:ident $name:ident [$other:tt $($rest:tt)*]) => {
        op_table!(@register $m $name [$($rest)*]);
    };
}
