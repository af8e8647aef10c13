from .tensorize import Conversion as Conversion
from .tensorize import OutputPathError as OutputPathError
from .tensorize import Refusal as Refusal
from .tensorize import TensorizeResult as TensorizeResult
from .tensorize import tensorize_dump as tensorize_dump
