"""Type stubs of the ``metron`` package (regions, counters, marks, GPU counters per region)."""

from types import TracebackType
from typing import Callable, Literal, Optional, Sequence, Tuple, Type, TypeVar, Union, overload

_F = TypeVar("_F", bound=Callable[..., object])

class MetronError(RuntimeError):
    """A Metron call was refused; the message says why and what is accepted."""

class Region:
    """A named region; ``with`` it to record one region per block."""

    @property
    def name(self) -> str: ...
    @property
    def id(self) -> int: ...
    def __enter__(self) -> "Region": ...
    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...

def region(name: str, gpu_metrics: Optional[Union[str, Sequence[str]]] = None) -> Region:
    """The region ``name`` (the same object for the same name), for ``with metron.region(name):``.

    ``gpu_metrics``: GPU counters over each outermost instance (the run's region mode:
    ``metron run --gpu-counter-mode region --gpu-metrics ...``); raises ``ValueError`` when
    the run does not count them.
    """

@overload
def profile(fn: _F) -> _F: ...
@overload
def profile(*, name: Optional[str] = None) -> Callable[[_F], _F]: ...
def profile(fn: Optional[_F] = None, *, name: Optional[str] = None) -> Union[_F, Callable[[_F], _F]]:
    """Records every call of ``fn`` as a region named ``module.qualname`` (or ``name``).

    Generators and coroutines: one region per call (the first running stretch) and one
    ``name (resumed)`` region per later stretch, so time suspended is not counted.
    """

def counter(name: str, value: float) -> None:
    """Records a value of counter ``name``."""

def mark(name: str) -> None:
    """Records an instant mark ``name``."""

def annotate(key: str, value: Union[str, int, float]) -> None:
    """Annotates the innermost open region of this thread with ``key = value``."""

def flush() -> None:
    """Delivers everything recorded so far to the outputs."""

def binding() -> Tuple[Literal["embedded", "process"], str]:
    """Which libmetron records for this process, and its file."""
