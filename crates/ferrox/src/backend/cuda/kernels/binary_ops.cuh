// binary_ops.cuh: one device functor per row of the Rust `binary_ops!`
// table, named Op<Variant> (BinaryOp::functor). A functor maps two values
// of the module's compute type TC to TC (to bool for the comparisons). Its
// call operator is a template, so a module compiles only the functor it
// instantiates (see unary_ops.cuh); the host instantiates an op only for
// the dtypes its kind computes in (BinaryKind::compute_dtype).
//
// Semantics are those of the CPU backend's element functions (element/);
// the per-dtype code lives in arith.cuh (fx_<op>) and complex.cuh.

struct OpAdd {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_add(a, b); }
};
struct OpSubtract {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_sub(a, b); }
};
struct OpMultiply {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_mul(a, b); }
};
struct OpDivide {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_div(a, b); }
};
struct OpPower {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_pow(a, b); }
};
struct OpMaximum {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_max(a, b); }
};
struct OpMinimum {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_min(a, b); }
};
// Remainder with the divisor's sign (Python's %): x % 0 is x for integers
// and bools, NaN for floats.
struct OpRemainder {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_remainder(a, b); }
};
// Division rounded toward negative infinity (Python's //): x // 0 is 0 for
// integers; floats take the floor of the rounded quotient; complex64 divides.
struct OpFloorDivide {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_floor_divide(a, b); }
};
// log(e^a + e^b) as hi + log1p(e^(lo - hi)).
struct OpLogAddExp {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_logaddexp(a, b); }
};
// The angle of the point (b, a) in (-pi, pi].
struct OpArcTan2 {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_arctan2(a, b); }
};
struct OpEqual {
    template <class C>
    __device__ __forceinline__ bool operator()(C a, C b) const { return fx_eq(a, b); }
};
struct OpNotEqual {
    template <class C>
    __device__ __forceinline__ bool operator()(C a, C b) const { return !fx_eq(a, b); }
};
struct OpLess {
    template <class C>
    __device__ __forceinline__ bool operator()(C a, C b) const { return fx_lt(a, b); }
};
struct OpLessEqual {
    template <class C>
    __device__ __forceinline__ bool operator()(C a, C b) const { return fx_le(a, b); }
};
struct OpGreater {
    template <class C>
    __device__ __forceinline__ bool operator()(C a, C b) const { return fx_lt(b, a); }
};
struct OpGreaterEqual {
    template <class C>
    __device__ __forceinline__ bool operator()(C a, C b) const { return fx_le(b, a); }
};

// Bool and the integers only (logical for bools).
struct OpBitwiseAnd {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_bitwise_and(a, b); }
};
struct OpBitwiseOr {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_bitwise_or(a, b); }
};
struct OpBitwiseXor {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_bitwise_xor(a, b); }
};
// The integers only (bools shift as uint8): C's shifts on x86-64, the count
// taken modulo 32 (64 for 64-bit types); see fx_left_shift.
struct OpLeftShift {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_left_shift(a, b); }
};
// Arithmetic for signed integers.
struct OpRightShift {
    template <class C>
    __device__ __forceinline__ C operator()(C a, C b) const { return fx_right_shift(a, b); }
};
