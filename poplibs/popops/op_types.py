"""PopLibs' element-wise op enums (popops/ExprOp.hpp): the op template argument of every
element-wise vertex. Vertex names spell it as popsim's API does, by the member's name
(``popops::BinaryOp1D<ADD,float>``); popc's reports qualify it
(``popops::BinaryOp1D<popops::expr::BinaryOpType::ADD,float>``)."""
import enum


class BinaryOpType(enum.Enum):
    """popops::expr::BinaryOpType (the members popsim implements)."""
    ADD = "ADD"
    ATAN2 = "ATAN2"
    BITWISE_AND = "BITWISE_AND"
    BITWISE_OR = "BITWISE_OR"
    BITWISE_XOR = "BITWISE_XOR"
    BITWISE_XNOR = "BITWISE_XNOR"
    DIVIDE = "DIVIDE"
    EQUAL = "EQUAL"
    GREATER_THAN_EQUAL = "GREATER_THAN_EQUAL"
    GREATER_THAN = "GREATER_THAN"
    LESS_THAN_EQUAL = "LESS_THAN_EQUAL"
    LOGICAL_AND = "LOGICAL_AND"
    LOGICAL_OR = "LOGICAL_OR"
    LESS_THAN = "LESS_THAN"
    MAXIMUM = "MAXIMUM"
    MINIMUM = "MINIMUM"
    MULTIPLY = "MULTIPLY"
    NOT_EQUAL = "NOT_EQUAL"
    POWER = "POWER"
    REMAINDER = "REMAINDER"
    SHIFT_LEFT = "SHIFT_LEFT"
    SHIFT_RIGHT = "SHIFT_RIGHT"
    SUBTRACT = "SUBTRACT"

    @property
    def cpp(self) -> str:
        return self.name  # popsim's API's form: popops::BinaryOp1D<ADD,float>


class UnaryOpType(enum.Enum):
    """popops::expr::UnaryOpType (the members popsim implements)."""
    ABSOLUTE = "ABSOLUTE"
    ASIN = "ASIN"
    BITWISE_NOT = "BITWISE_NOT"
    CBRT = "CBRT"
    CEIL = "CEIL"
    COS = "COS"
    ERF = "ERF"
    EXPONENT = "EXPONENT"
    EXPONENT_MINUS_ONE = "EXPONENT_MINUS_ONE"
    FLOOR = "FLOOR"
    GELU_ERF = "GELU_ERF"
    INVERSE = "INVERSE"
    IS_FINITE = "IS_FINITE"
    IS_NAN = "IS_NAN"
    LOGARITHM = "LOGARITHM"
    LOGARITHM_ONE_PLUS = "LOGARITHM_ONE_PLUS"
    LOGICAL_NOT = "LOGICAL_NOT"
    NEGATE = "NEGATE"
    NEARBY_INT = "NEARBY_INT"
    POPCOUNT = "POPCOUNT"
    ROUND = "ROUND"
    RSQRT = "RSQRT"
    SIGMOID = "SIGMOID"
    SIGNUM = "SIGNUM"
    SIN = "SIN"
    SQRT = "SQRT"
    SQUARE = "SQUARE"
    TAN = "TAN"
    TANH = "TANH"
    TRUNC = "TRUNC"

    @property
    def cpp(self) -> str:
        return self.name  # popsim's API's form: popops::UnaryOp1D<EXPONENT,float>
