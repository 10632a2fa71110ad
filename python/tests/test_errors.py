"""Error behaviour: exception types and messages that name the op."""

import pytest

import ferrox as fx

BINARY_NAMES = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
                "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("name", BINARY_NAMES)
@pytest.mark.parametrize("sa,sb", [((3,), (4,)), ((2, 3), (3, 2)), ((2, 1, 3), (4, 2))],
                         ids=str)
def test_binary_broadcast_mismatch(name, sa, sb):
    with pytest.raises(ValueError, match=name):
        getattr(fx, name)(fx.ones(sa), fx.ones(sb))


def test_operator_broadcast_mismatch():
    with pytest.raises(ValueError, match="add"):
        fx.ones((3,)) + fx.ones((4,))
    with pytest.raises(ValueError):
        fx.ones((3,)) * fx.ones((2, 2))


def test_where_broadcast_mismatch():
    with pytest.raises(ValueError, match="where"):
        fx.where(fx.ones((3,), dtype=fx.bool_), fx.ones((4,)), fx.ones((3,)))


@pytest.mark.parametrize("sa,sb", [((3, 4), (5, 2)), ((4,), (3,)), ((2, 3), (2,)),
                                   ((2, 2, 3), (2, 4, 5)), ((2, 3, 4), (3, 4, 5))], ids=str)
def test_matmul_mismatch(sa, sb):
    with pytest.raises(ValueError, match="matmul"):
        fx.matmul(fx.ones(sa), fx.ones(sb))
    with pytest.raises(ValueError, match="matmul"):
        fx.ones(sa) @ fx.ones(sb)


def test_matmul_zero_dim_operand():
    with pytest.raises(ValueError, match="matmul"):
        fx.matmul(fx.array(1.0), fx.ones((2, 2)))
    with pytest.raises(ValueError, match="matmul"):
        fx.matmul(fx.ones((2,)), fx.array(1.0))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("axis", [3, -4, 10])
def test_reduction_axis_out_of_range(name, axis):
    # MLX raises IndexError for an axis outside the array, as NumPy does.
    with pytest.raises(IndexError, match=name):
        getattr(fx, name)(fx.ones((2, 3, 4)), axis=axis)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_reduction_axis_tuple_out_of_range(name):
    with pytest.raises(IndexError, match=name):
        getattr(fx, name)(fx.ones((2, 3)), axis=(0, 2))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_of_empty(name):
    with pytest.raises(ValueError, match=name):
        getattr(fx, name)(fx.zeros((0,)))
    with pytest.raises(ValueError):
        getattr(fx, name)(fx.zeros((3, 0)))


def test_squeeze_errors():
    with pytest.raises(ValueError, match="squeeze"):
        fx.squeeze(fx.ones((1, 3)), 1)  # not size 1
    with pytest.raises(IndexError, match="squeeze"):
        fx.squeeze(fx.ones((1, 3)), 2)  # out of range: IndexError, as MLX
    with pytest.raises(IndexError, match="squeeze"):
        fx.squeeze(fx.ones((1, 3)), -3)


def test_expand_dims_errors():
    with pytest.raises(IndexError, match="expand_dims"):
        fx.expand_dims(fx.ones((2, 3)), 3)
    with pytest.raises(IndexError, match="expand_dims"):
        fx.expand_dims(fx.ones((2, 3)), -4)
    with pytest.raises(IndexError, match="expand_dims"):
        fx.expand_dims(fx.ones((2,)), (0, 3))


def test_transpose_errors():
    with pytest.raises(IndexError, match="transpose"):
        fx.transpose(fx.ones((2, 3)), (0, 2))
    with pytest.raises(ValueError, match="transpose"):
        fx.transpose(fx.ones((2, 3)), (0, 0))
    with pytest.raises(ValueError, match="transpose"):
        fx.transpose(fx.ones((2, 3, 4)), (1, 0))


def test_reshape_errors():
    with pytest.raises(ValueError, match="reshape"):
        fx.reshape(fx.ones((2, 3)), (4, 2))
    with pytest.raises(ValueError, match="reshape"):
        fx.ones((2, 3)).reshape(5, -1)
    with pytest.raises(ValueError, match="reshape"):
        fx.reshape(fx.ones((2, 3)), (-1, -1))


def test_concatenate_errors():
    with pytest.raises(ValueError, match="concatenate"):
        fx.concatenate([fx.ones((2, 3)), fx.ones((2, 4))], axis=0)
    with pytest.raises(IndexError, match="concatenate"):
        fx.concatenate([fx.ones((2, 3)), fx.ones((2, 3))], axis=2)
    with pytest.raises(ValueError, match="concatenate"):
        fx.concatenate([fx.ones((2, 3)), fx.ones((3,))], axis=0)
    with pytest.raises(IndexError, match="concatenate"):
        fx.concatenate([fx.ones((2, 3)), fx.ones((2, 3))], axis=-3)


def test_stack_errors():
    with pytest.raises(ValueError, match="stack"):
        fx.stack([fx.ones((2, 3)), fx.ones((3, 2))])
    with pytest.raises(IndexError, match="stack"):  # axis out of range for the stacked result
        fx.stack([fx.ones((2, 3)), fx.ones((2, 3))], axis=4)


def test_broadcast_to_errors():
    with pytest.raises(ValueError, match="broadcast"):
        fx.broadcast_to(fx.ones((3,)), (4,))
    with pytest.raises(ValueError, match="broadcast"):
        fx.broadcast_to(fx.ones((2, 3)), (3,))


def test_flatten_errors():
    # As MLX: out-of-range axes are clamped; only an empty range is an error.
    assert fx.flatten(fx.ones((2, 3)), 0, 2).shape == (6,)
    assert fx.flatten(fx.ones((2, 3)), -5, 7).shape == (6,)
    with pytest.raises(ValueError, match="flatten"):
        fx.flatten(fx.ones((2, 3)), 1, 0)
    with pytest.raises(ValueError, match="flatten"):
        fx.flatten(fx.ones((2, 3)), 2, 3)


def test_unsupported_dtype():
    with pytest.raises(ValueError, match="negative"):
        fx.negative(fx.array([True, False]))


@pytest.mark.parametrize("ix", [3, -4, (0, 5), (0, 0, 0)], ids=str)
def test_index_errors(ix):
    with pytest.raises(IndexError):
        fx.zeros((3, 5))[ix]


def test_errors_leave_no_broken_state():
    # after errors, normal ops still work
    for _ in range(3):
        with pytest.raises(ValueError):
            fx.ones((3,)) + fx.ones((4,))
    a = fx.ones((3,)) + 1
    fx.eval(a)
    assert a.tolist() == [2.0, 2.0, 2.0]
