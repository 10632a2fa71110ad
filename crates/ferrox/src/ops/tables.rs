//! The op tables: each kernel-backed elementwise op is declared once, as a
//! row of a table macro, and every place that needs the list of ops —
//! the op enum and its names, the Rust builders and `Array` methods, the
//! derivative rules, the CPU kernel dispatch, the CUDA kernel instantiations,
//! the Python functions and methods — expands the same rows (candle's
//! `unary_op!`, MLX's `DEFAULT_OP` list).
//!
//! A table macro takes the name of a consumer macro and calls it with every
//! row, so a consumer in another crate (the Python bindings) reads the same
//! list: `ferrox::unary_ops!(my_consumer)`.
//!
//! A unary row is `name: Variant, kind, python, "doc", |x, y| derivative;`:
//! - `kind` fixes the dtype rules (see [`UnaryKind`](crate::backend::UnaryKind)),
//! - `python` is `both` when Python gets the function and (as in MLX's
//!   `array` class) the method, `function` for the function alone, `none`
//!   when its Python binding is written by hand (every op is a method of
//!   the Rust `Array`),
//! - the derivative is d out / d x as an array shaped like `x`, given the
//!   input `x` and the output `y` (written with `ops`, so it can be
//!   differentiated again).

/// Every kernel-backed elementwise op of one argument.
#[macro_export]
macro_rules! unary_ops {
    ($consumer:ident) => {
        $consumer! {
            abs: Abs, magnitude, both, "Elementwise absolute value; the magnitude (float32) for complex64.",
                |x, _y| ops::sign(x);
            negative: Negative, signed, function, "Elementwise negation (not defined for bool).",
                |x, _y| ops::negative(&ops::ones_like(x)?);
            sign: Sign, same, function, "Elementwise sign: -1, 0 or 1 (`z / |z|` for complex64).",
                |x, _y| ops::zeros_like(x);
            square: Square, same, both, "Elementwise square.",
                |x, _y| ops::multiply(x, &constant(2.0, x));
            floor: Floor, real, function, "Elementwise floor (integers and bool unchanged).",
                |x, _y| ops::zeros_like(x);
            ceil: Ceil, real, function, "Elementwise ceiling (integers and bool unchanged).",
                |x, _y| ops::zeros_like(x);
            trunc: Trunc, real, function, "Elementwise rounding toward zero (integers and bool unchanged).",
                |x, _y| ops::zeros_like(x);
            round: Round, same, none, "Elementwise rounding to the nearest integer, halves to even.",
                |x, _y| ops::zeros_like(x);
            imag: Imag, magnitude, function, "The imaginary part (float32) of complex64; zeros for other dtypes.",
                |x, _y| ops::zeros_like(x);
            conj: Conj, same, both, "Elementwise complex conjugate (other dtypes unchanged).",
                |x, _y| ops::ones_like(x);
            exp: Exp, float, both, "Elementwise e^x (integers compute in float32).",
                |_x, y| Ok(y.clone());
            expm1: Expm1, real_float, function, "Elementwise e^x - 1, accurate near zero.",
                |_x, y| ops::add(y, &constant(1.0, y));
            log: Log, float, both, "Elementwise natural logarithm.",
                |x, _y| ops::reciprocal(x);
            log1p: Log1p, float, both, "Elementwise ln(1 + x), accurate near zero.",
                |x, _y| ops::reciprocal(&ops::add(x, &constant(1.0, x))?);
            log2: Log2, float, both, "Elementwise base-2 logarithm.",
                |x, _y| ops::reciprocal(&ops::multiply(x, &constant(std::f64::consts::LN_2, x))?);
            log10: Log10, float, both, "Elementwise base-10 logarithm.",
                |x, _y| ops::reciprocal(&ops::multiply(x, &constant(std::f64::consts::LN_10, x))?);
            sqrt: Sqrt, float, both, "Elementwise square root.",
                |_x, y| ops::divide(&constant(0.5, y), y);
            rsqrt: Rsqrt, float, both, "Elementwise 1 / sqrt(x).",
                |x, y| ops::multiply(&constant(-0.5, y), &ops::divide(y, x)?);
            sin: Sin, float, both, "Elementwise sine.",
                |x, _y| ops::cos(x);
            cos: Cos, float, both, "Elementwise cosine.",
                |x, _y| ops::negative(&ops::sin(x)?);
            tan: Tan, float, function, "Elementwise tangent.",
                |_x, y| ops::add(&constant(1.0, y), &ops::square(y)?);
            arcsin: Arcsin, float, function, "Elementwise inverse sine.",
                |x, _y| ops::rsqrt(&ops::subtract(&constant(1.0, x), &ops::square(x)?)?);
            arccos: Arccos, float, function, "Elementwise inverse cosine.",
                |x, _y| ops::negative(&ops::rsqrt(&ops::subtract(&constant(1.0, x), &ops::square(x)?)?)?);
            arctan: Arctan, float, function, "Elementwise inverse tangent.",
                |x, _y| ops::reciprocal(&ops::add(&constant(1.0, x), &ops::square(x)?)?);
            sinh: Sinh, float, function, "Elementwise hyperbolic sine.",
                |x, _y| ops::cosh(x);
            cosh: Cosh, float, function, "Elementwise hyperbolic cosine.",
                |x, _y| ops::sinh(x);
            tanh: Tanh, float, function, "Elementwise hyperbolic tangent.",
                |_x, y| ops::subtract(&constant(1.0, y), &ops::square(y)?);
            arcsinh: Arcsinh, float, function, "Elementwise inverse hyperbolic sine.",
                |x, _y| ops::rsqrt(&ops::add(&ops::square(x)?, &constant(1.0, x))?);
            arccosh: Arccosh, float, function, "Elementwise inverse hyperbolic cosine.",
                |x, _y| ops::rsqrt(&ops::subtract(&ops::square(x)?, &constant(1.0, x))?);
            arctanh: Arctanh, float, function, "Elementwise inverse hyperbolic tangent.",
                |x, _y| ops::reciprocal(&ops::subtract(&constant(1.0, x), &ops::square(x)?)?);
            sigmoid: Sigmoid, real_float, function, "Elementwise logistic sigmoid 1 / (1 + e^-x).",
                |_x, y| ops::multiply(y, &ops::subtract(&constant(1.0, y), y)?);
            erf: Erf, real_float, function, "Elementwise error function.",
                |x, _y| ops::multiply(
                    &constant(std::f64::consts::FRAC_2_SQRT_PI, x),
                    &ops::exp(&ops::negative(&ops::square(x)?)?)?,
                );
            erfinv: Erfinv, real_float, function, "Elementwise inverse of the error function.",
                |_x, y| ops::multiply(
                    &constant(std::f64::consts::PI.sqrt() / 2.0, y),
                    &ops::exp(&ops::square(y)?)?,
                );
            isnan: Isnan, predicate, function, "Elementwise test for NaN (bool result).",
                |x, _y| ops::zeros_like(x);
            isinf: Isinf, predicate, function, "Elementwise test for ±infinity (bool result).",
                |x, _y| ops::zeros_like(x);
            isfinite: Isfinite, predicate, function, "Elementwise test for finite values (bool result).",
                |x, _y| ops::zeros_like(x);
            isposinf: Isposinf, predicate, function, "Elementwise test for +infinity (bool result).",
                |x, _y| ops::zeros_like(x);
            isneginf: Isneginf, predicate, function, "Elementwise test for -infinity (bool result).",
                |x, _y| ops::zeros_like(x);
            logical_not: LogicalNot, predicate, function, "Elementwise logical not: whether the value is zero.",
                |x, _y| ops::zeros_like(x);
            bitwise_invert: BitwiseInvert, bits, function, "Elementwise bitwise not of integers and bools.",
                |x, _y| ops::zeros_like(x);
            gelu_approx: GeluApprox, real_float, none,
                "GELU's tanh approximation in one pass (`nn::gelu_approx`, as MLX compiles it).",
                |x, _y| ops::gelu_approx_derivative(x);
            gelu_approx_derivative: GeluApproxDerivative, real_float, none,
                "The derivative of `gelu_approx` in one pass (its backward).",
                |x, _y| gelu_approx_second_derivative(x);
        }
    };
}

/// Every kernel-backed elementwise op of two arguments (with broadcasting
/// and MLX's type promotion). A row is
/// `name: Variant, kind, "doc", |a, b, out| (d out/d a, d out/d b);` with
/// the partial derivatives broadcastable to the output (`kind`: see
/// [`BinaryKind`](crate::backend::BinaryKind)).
#[macro_export]
macro_rules! binary_ops {
    ($consumer:ident) => {
        $consumer! {
            add: Add, arith, "Elementwise sum with broadcasting.",
                |_a, _b, out| (constant(1.0, out), constant(1.0, out));
            subtract: Subtract, arith, "Elementwise difference with broadcasting.",
                |_a, _b, out| (constant(1.0, out), constant(-1.0, out));
            multiply: Multiply, arith, "Elementwise product with broadcasting.",
                |a, b, _out| (b.clone(), a.clone());
            divide: Divide, float, "Elementwise true division; integer inputs give float32.",
                |_a, b, out| {
                    let inv = ops::reciprocal(b)?;
                    (inv.clone(), ops::negative(&ops::multiply(out, &inv)?)?)
                };
            power: Power, arith, "Elementwise power (a negative integer exponent gives 0, as MLX).",
                |a, b, out| {
                    // d/da a^b = b a^(b-1); d/db a^b = a^b ln a (0 where a <= 0, so a
                    // constant exponent's zero tangent never meets a NaN).
                    let da = ops::multiply(b, &ops::power(a, &ops::subtract(b, &constant(1.0, b))?)?)?;
                    let zero = ops::zeros_like(a)?;
                    let safe_log = ops::where_(&ops::greater(a, &zero)?, &ops::log(a)?, &zero)?;
                    (da, ops::multiply(out, &safe_log)?)
                };
            maximum: Maximum, arith, "Elementwise maximum (NaN propagates).",
                |a, b, out| (indicator(ops::greater_equal(a, b), out)?, indicator(ops::less(a, b), out)?);
            minimum: Minimum, arith, "Elementwise minimum (NaN propagates).",
                |a, b, out| (indicator(ops::less_equal(a, b), out)?, indicator(ops::greater(a, b), out)?);
            remainder: Remainder, no_complex, "Elementwise remainder with the sign of the divisor (Python's %).",
                |a, b, out| (constant(1.0, out), ops::negative(&ops::floor_divide(a, b)?)?);
            floor_divide: FloorDivide, arith, "Elementwise division rounded toward negative infinity (Python's //).",
                |_a, _b, out| (ops::zeros_like(out)?, ops::zeros_like(out)?);
            logaddexp: LogAddExp, float, "Elementwise log(e^a + e^b), computed without overflow.",
                |a, b, out| (ops::exp(&ops::subtract(a, out)?)?, ops::exp(&ops::subtract(b, out)?)?);
            arctan2: ArcTan2, real_float, "Elementwise angle of the point (b, a): arctan(a / b) in the right quadrant.",
                |a, b, _out| {
                    let r2 = ops::add(&ops::square(a)?, &ops::square(b)?)?;
                    (ops::divide(b, &r2)?, ops::negative(&ops::divide(a, &r2)?)?)
                };
            equal: Equal, compare, "Elementwise `a == b` (bool result).", |_a, _b, out| zero_partials(out)?;
            not_equal: NotEqual, compare, "Elementwise `a != b` (bool result).", |_a, _b, out| zero_partials(out)?;
            less: Less, compare, "Elementwise `a < b` (bool result).", |_a, _b, out| zero_partials(out)?;
            less_equal: LessEqual, compare, "Elementwise `a <= b` (bool result).", |_a, _b, out| zero_partials(out)?;
            greater: Greater, compare, "Elementwise `a > b` (bool result).", |_a, _b, out| zero_partials(out)?;
            greater_equal: GreaterEqual, compare, "Elementwise `a >= b` (bool result).",
                |_a, _b, out| zero_partials(out)?;
            bitwise_and: BitwiseAnd, bits, "Elementwise bitwise and of integers and bools.",
                |_a, _b, out| zero_partials(out)?;
            bitwise_or: BitwiseOr, bits, "Elementwise bitwise or of integers and bools.",
                |_a, _b, out| zero_partials(out)?;
            bitwise_xor: BitwiseXor, bits, "Elementwise bitwise xor of integers and bools.",
                |_a, _b, out| zero_partials(out)?;
            left_shift: LeftShift, shift, "Elementwise `a << b` (bools shift as uint8).",
                |_a, _b, out| zero_partials(out)?;
            right_shift: RightShift, shift, "Elementwise `a >> b`, arithmetic for signed integers (bools shift as uint8).",
                |_a, _b, out| zero_partials(out)?;
        }
    };
}
