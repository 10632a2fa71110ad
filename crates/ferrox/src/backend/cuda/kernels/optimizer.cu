// optimizer.cu: the fused optimizer step (backend/update_rule.rs), one
// kernel per rule, for the real float module dtypes T (computing in TC:
// float, or double for f64, rounding once on store). The twin of
// backend/cpu/optimizer.rs, formula for formula.
//
// Every kernel takes
//   (const T* p, const T* g, const T* s0, const T* s1,
//    const float* lr, const float* t,
//    T* p_out, T* s0_out, T* s1_out, long long n, FxOptConstants k)
// over n contiguous elements: the parameter, its gradient, the rule's states
// (s1 and s0 unused and null when the rule has fewer), the learning rate and
// step count (one float each, on the device), the outputs, and the rule's
// constants (UpdateRule::constants: eight doubles, by value). Any grid;
// blockDim 256.
//   sgd_update       s0 = v (momentum > 0)
//   sgd_plain_update no state (momentum <= 0)
//   rmsprop_update   s0 = v
//   adagrad_update   s0 = v
//   adadelta_update  s0 = v, s1 = u
//   adam_update      s0 = m, s1 = v (Adam and AdamW)
//   adamax_update    s0 = m, s1 = v
//   lion_update      s0 = m

#if FX_IS_FLOAT

// The rule's constants as the host passes them.
struct FxOptConstants {
    double k[8];
};

// The rule's constants and the step's scalars in the compute type.
struct FxOptK {
    TC k[8];
    TC lr, t;
};

// Elements [i, i + P) of every array, through 16-byte packs when `packed`.
template <int S, int P, class F>
__device__ __forceinline__ void fx_opt_run(const T* p, const T* g, const T* s0, const T* s1, T* po, T* s0o, T* s1o,
                                           long long i, const FxOptK& k, F f) {
    FxPack<T, P> vp, vg, v0, v1;
    vp.load(p + i);
    vg.load(g + i);
    if (S > 0) v0.load(s0 + i);
    if (S > 1) v1.load(s1 + i);
#pragma unroll
    for (int j = 0; j < P; ++j) {
        TC s[2] = {S > 0 ? fx_to_c(v0.v[j]) : TC(0), S > 1 ? fx_to_c(v1.v[j]) : TC(0)};
        vp.v[j] = fx_from_c(f(k, fx_to_c(vp.v[j]), fx_to_c(vg.v[j]), s));
        if (S > 0) v0.v[j] = fx_from_c(s[0]);
        if (S > 1) v1.v[j] = fx_from_c(s[1]);
    }
    vp.store(po + i);
    if (S > 0) v0.store(s0o + i);
    if (S > 1) v1.store(s1o + i);
}

// The grid-stride loop: 16-byte packs where every pointer allows them, then
// the elements one by one.
template <int S, class F>
__device__ __forceinline__ void fx_opt_loop(const T* p, const T* g, const T* s0, const T* s1, const float* lr,
                                            const float* t, T* po, T* s0o, T* s1o, long long n,
                                            const FxOptConstants& c, F f) {
    constexpr int P = 16 / sizeof(T);
    FxOptK k;
#pragma unroll
    for (int i = 0; i < 8; ++i) k.k[i] = (TC)c.k[i];
    k.lr = (TC)*lr;
    k.t = (TC)*t;
    const long long tid = fx_thread_id(), nth = fx_thread_count();
    bool packed = fx_aligned(p, 16) && fx_aligned(g, 16) && fx_aligned(po, 16);
    if (S > 0) packed = packed && fx_aligned(s0, 16) && fx_aligned(s0o, 16);
    if (S > 1) packed = packed && fx_aligned(s1, 16) && fx_aligned(s1o, 16);
    long long done = 0;
    if (packed) {
        const long long npk = n / P;
#pragma unroll 1
        for (long long q = tid; q < npk; q += nth) fx_opt_run<S, P>(p, g, s0, s1, po, s0o, s1o, q * P, k, f);
        done = npk * P;
    }
#pragma unroll 1
    for (long long i = done + tid; i < n; i += nth) fx_opt_run<S, 1>(p, g, s0, s1, po, s0o, s1o, i, k, f);
}

// ---------------------------------------------------------------------------
// The rules: f(k, p, g, s) returns the new parameter and updates s
// ---------------------------------------------------------------------------

struct FxSgd {
    __device__ __forceinline__ TC operator()(const FxOptK& k, TC p, TC g, TC (&s)[2]) const {
        const TC momentum = k.k[0], weight_decay = k.k[1], damp_scale = k.k[2];
        if (weight_decay != TC(0)) g = g + weight_decay * p;
        if (momentum <= TC(0)) return p - k.lr * g;
        const TC v = momentum * s[0] + damp_scale * g;
        s[0] = v;
        return p - k.lr * (k.k[3] != TC(0) ? g + momentum * v : v);
    }
};

struct FxRmsProp {
    __device__ __forceinline__ TC operator()(const FxOptK& k, TC p, TC g, TC (&s)[2]) const {
        const TC v = k.k[0] * s[0] + k.k[1] * (g * g);
        s[0] = v;
        return p - k.lr * g / (sqrt(v) + k.k[2]);
    }
};

struct FxAdagrad {
    __device__ __forceinline__ TC operator()(const FxOptK& k, TC p, TC g, TC (&s)[2]) const {
        const TC v = s[0] + g * g;
        s[0] = v;
        return p - k.lr * g / (sqrt(v) + k.k[0]);
    }
};

struct FxAdaDelta {
    __device__ __forceinline__ TC operator()(const FxOptK& k, TC p, TC g, TC (&s)[2]) const {
        const TC rho = k.k[0], rho_c = k.k[1], eps = k.k[2];
        const TC v = rho * s[0] + rho_c * (g * g);
        const TC d = sqrt(s[1] + eps) / sqrt(v + eps) * g;
        s[0] = v;
        s[1] = rho * s[1] + rho_c * (d * d);
        return p - k.lr * d;
    }
};

struct FxAdam {
    __device__ __forceinline__ TC operator()(const FxOptK& k, TC p, TC g, TC (&s)[2]) const {
        const TC b1 = k.k[0], b1_c = k.k[1], b2 = k.k[2], b2_c = k.k[3], eps = k.k[4], weight_decay = k.k[5];
        if (weight_decay != TC(0)) p = p * (TC(1) - k.lr * weight_decay);
        const TC m = b1 * s[0] + b1_c * g;
        const TC v = b2 * s[1] + b2_c * (g * g);
        s[0] = m;
        s[1] = v;
        if (k.k[6] != TC(0)) {
            const TC c1 = k.lr / (TC(1) - pow(b1, k.t));
            const TC c2 = TC(1) / sqrt(TC(1) - pow(b2, k.t));
            return p - c1 * m / (sqrt(v) * c2 + eps);
        }
        return p - k.lr * m / (sqrt(v) + eps);
    }
};

struct FxAdamax {
    __device__ __forceinline__ TC operator()(const FxOptK& k, TC p, TC g, TC (&s)[2]) const {
        const TC b1 = k.k[0], b1_c = k.k[1], b2 = k.k[2], eps = k.k[3];
        const TC m = b1 * s[0] + b1_c * g;
        const TC v = fmax(b2 * s[1], fabs(g));
        s[0] = m;
        s[1] = v;
        return p - k.lr * m / (v + eps);
    }
};

struct FxLion {
    __device__ __forceinline__ TC operator()(const FxOptK& k, TC p, TC g, TC (&s)[2]) const {
        const TC b1 = k.k[0], b1_c = k.k[1], b2 = k.k[2], b2_c = k.k[3], weight_decay = k.k[4];
        const TC direction = b1 * s[0] + b1_c * g;
        s[0] = b2 * s[0] + b2_c * g;
        if (weight_decay > TC(0)) p = (TC(1) - k.lr * weight_decay) * p;
        const TC sign = direction > TC(0) ? TC(1) : (direction < TC(0) ? TC(-1) : direction);
        return p - k.lr * sign;
    }
};

#define FX_OPTIMIZER(NAME, STATES, RULE)                                                                          \
    extern "C" __global__ void NAME(const T* p, const T* g, const T* s0, const T* s1, const float* lr,           \
                                    const float* t, T* po, T* s0o, T* s1o, long long n, FxOptConstants c) {     \
        fx_opt_loop<STATES>(p, g, s0, s1, lr, t, po, s0o, s1o, n, c, RULE());                                    \
    }

FX_OPTIMIZER(sgd_update, 1, FxSgd)
FX_OPTIMIZER(sgd_plain_update, 0, FxSgd)
FX_OPTIMIZER(rmsprop_update, 1, FxRmsProp)
FX_OPTIMIZER(adagrad_update, 1, FxAdagrad)
FX_OPTIMIZER(adadelta_update, 2, FxAdaDelta)
FX_OPTIMIZER(adam_update, 2, FxAdam)
FX_OPTIMIZER(adamax_update, 2, FxAdamax)
FX_OPTIMIZER(lion_update, 1, FxLion)

#endif
