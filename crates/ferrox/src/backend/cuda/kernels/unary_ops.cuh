// unary_ops.cuh: one device functor per row of the Rust `unary_ops!` table,
// named Op<Variant> (UnaryOp::functor). A functor maps the module's compute
// type TC to TC (to bool for the predicates). Its call operator is a
// template, so a module compiles only the functor it instantiates: a body
// may use helpers that exist for some dtypes only (fx_exp is not defined
// for integers), and the host instantiates an op only for the dtypes its
// kind computes in (UnaryKind::compute_dtype).
//
// Semantics are those of the CPU backend's element functions (element/):
// the same formulas and special values; exact ops give the same bits, real
// transcendental functions agree within 2 ulp (arith.cuh says which run in
// float and which in double). The per-dtype code lives in arith.cuh
// (fx_<op>) and complex.cuh; a functor picks it.

// |a|; complex64 gives (|z|, 0) (the host keeps the real part).
struct OpAbs {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_abs(a); }
};
// -a (wrapping for integers).
struct OpNegative {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_neg(a); }
};
// -1, 0 or 1 (0 for NaN, wrapping for unsigned integers); z / |z| for complex64.
struct OpSign {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_sign(a); }
};
// a * a with the dtype's product (wrapping, logical and, Annex G complex).
struct OpSquare {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_mul(a, a); }
};
// Integers and bools unchanged.
struct OpFloor {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_floor(a); }
};
struct OpCeil {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_ceil(a); }
};
struct OpTrunc {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_trunc(a); }
};
// Halves to even (each part of a complex64).
struct OpRound {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_round(a); }
};
// (im, 0) for complex64, zero for every other dtype.
struct OpImag {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const {
#if FX_IS_COMPLEX
        return fx_cplx(a.im, 0.0f);
#else
        return fx_zero();
#endif
    }
};
// (re, -im) for complex64, the value itself for every other dtype.
struct OpConj {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const {
#if FX_IS_COMPLEX
        return fx_cplx(a.re, -a.im);
#else
        return a;
#endif
    }
};
struct OpExp {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_exp(a); }
};
struct OpExpm1 {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_expm1(a); }
};
struct OpLog {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_log(a); }
};
struct OpLog1p {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_log1p(a); }
};
struct OpLog2 {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_log2(a); }
};
struct OpLog10 {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_log10(a); }
};
struct OpSqrt {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_sqrt(a); }
};
struct OpRsqrt {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_rsqrt(a); }
};
struct OpSin {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_sin(a); }
};
struct OpCos {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_cos(a); }
};
struct OpTan {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_tan(a); }
};
struct OpArcsin {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_arcsin(a); }
};
struct OpArccos {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_arccos(a); }
};
struct OpArctan {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_arctan(a); }
};
struct OpSinh {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_sinh(a); }
};
struct OpCosh {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_cosh(a); }
};
struct OpTanh {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_tanh(a); }
};
struct OpArcsinh {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_arcsinh(a); }
};
struct OpArccosh {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_arccosh(a); }
};
struct OpArctanh {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_arctanh(a); }
};
struct OpSigmoid {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_sigmoid(a); }
};
struct OpErf {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_erf(a); }
};
struct OpErfinv {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_erfinv(a); }
};

// Predicates: TC -> bool.
// Either part, for complex64; false for integers and bools.
struct OpIsnan {
    template <class C>
    __device__ __forceinline__ bool operator()(C a) const { return fx_isnan(a); }
};
struct OpIsinf {
    template <class C>
    __device__ __forceinline__ bool operator()(C a) const { return fx_isinf(a); }
};
struct OpIsfinite {
    template <class C>
    __device__ __forceinline__ bool operator()(C a) const { return fx_isfinite(a); }
};
// Complex64: re == +inf and im == 0 (MLX).
struct OpIsposinf {
    template <class C>
    __device__ __forceinline__ bool operator()(C a) const { return fx_isposinf(a); }
};
struct OpIsneginf {
    template <class C>
    __device__ __forceinline__ bool operator()(C a) const { return fx_isneginf(a); }
};
// Whether the value is zero (both parts, for complex64).
struct OpLogicalNot {
    template <class C>
    __device__ __forceinline__ bool operator()(C a) const { return fx_eq(a, fx_zero()); }
};

// Bool and the integers only.
// ~a; logical not for bools.
struct OpBitwiseInvert {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_bitwise_invert(a); }
};
// GELU's tanh approximation and its derivative (arith.cuh).
struct OpGeluApprox {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_gelu_approx(a); }
};
struct OpGeluApproxDerivative {
    template <class C>
    __device__ __forceinline__ C operator()(C a) const { return fx_gelu_approx_derivative(a); }
};
