from .assertions import LeftRunningWarning as LeftRunningWarning
from .assertions import NotComparedWarning as NotComparedWarning
from .assertions import NothingCheckedWarning as NothingCheckedWarning
from .assertions import RankZeroNotApartWarning as RankZeroNotApartWarning
from .assertions import assert_pp_safe as assert_pp_safe
from .assertions import pp_safety_report as pp_safety_report
