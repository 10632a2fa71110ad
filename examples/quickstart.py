"""A quick tour of ferrox, an MLX-compatible array library.

Run:  python examples/quickstart.py
"""

import numpy as np

import ferrox as fx

# --- Making arrays -------------------------------------------------------
a = fx.array([1, 2, 3])  # Python ints -> int32
b = fx.array([[1.0, 2.0], [3.0, 4.0]])  # Python floats -> float32
print("a =", a)
print("b.shape =", b.shape, " b.dtype =", b.dtype, " b.ndim =", b.ndim)
print("zeros:", fx.zeros((2, 3)))
print("arange:", fx.arange(0, 10, 3), " linspace:", fx.linspace(0, 1, 5))
print("eye:", fx.eye(3, dtype=fx.int32))

# --- dtype promotion with Python scalars (scalars are "weak") -------------
print("int32 + 1   ->", (a + 1).dtype)  # stays int32
print("int32 + 1.5 ->", (a + 1.5).dtype)  # becomes float32
h = fx.ones((2,), dtype=fx.float16)
print("float16 * 2.0 ->", (h * 2.0).dtype)  # stays float16
print("int32 / int32 ->", (a / a).dtype)  # divide gives float32

# --- Lazy evaluation -----------------------------------------------------
# Building an expression records a graph; nothing is computed yet.
x = fx.ones((1000, 1000))
y = fx.exp(x * 2.0) + 1.0
print("y is built but not computed; active memory:", fx.get_active_memory(), "bytes")
fx.eval(y)  # now it is computed (item/tolist/np.array also force evaluation)
print("after fx.eval(y):                 ", fx.get_active_memory(), "bytes")

# --- Broadcasting --------------------------------------------------------
col = fx.array([[10], [20], [30]])  # shape (3, 1)
row = fx.array([1, 2, 3, 4])  # shape (4,)
print("col + row has shape", (col + row).shape)
print(col + row)

# --- Reductions ----------------------------------------------------------
m = fx.arange(12).reshape(3, 4)
print("sum:", m.sum().item(), " sum(axis=0):", m.sum(axis=0).tolist())
print("mean(axis=1, keepdims=True):", fx.mean(m, axis=1, keepdims=True).tolist())
print("max:", fx.max(m).item(), " argmax(axis=1):", fx.argmax(m, axis=1).tolist())

# --- Matrix multiplication -----------------------------------------------
w = fx.array([[1.0, 0.0], [0.0, 2.0]])
print("b @ w =", (b @ w).tolist())
batch = fx.ones((5, 2, 3)) @ fx.ones((3, 4))  # batched, with broadcasting
print("batched matmul shape:", batch.shape)

# --- Slicing (views, no copies) ------------------------------------------
print("m[1]      =", m[1].tolist())
print("m[:, ::-1]=", m[:, ::-1].tolist())
print("m[None, 0, 1:3] shape:", m[None, 0, 1:3].shape)
print("m.T shape:", m.T.shape)

# --- NumPy round-trip ----------------------------------------------------
n = np.array(m)  # buffer protocol
print("to NumPy:", type(n).__name__, n.dtype, n.shape)
back = fx.array(n * 2)
print("from NumPy:", back.dtype, back[2].tolist())
print("float64 NumPy -> ", fx.array(np.ones(2)).dtype, "(pass dtype=fx.float64 to keep it)")
