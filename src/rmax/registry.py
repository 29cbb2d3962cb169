"""Named variants registered where they are defined (benchmark families, launchers, HPL engines,
survey steps, agent probes, tuning strategies): one name, one variant. A second class of the same
name would silently replace the first, and which one a user gets would depend on import order."""

from __future__ import annotations

from typing import Any, Callable


class Registry(dict):
    """name -> variant, in the order registered; `register` is a class decorator that stores the
    class (or `make(cls)`, e.g. an instance) under `cls.name` and refuses a name already taken."""

    def __init__(self, what: str, make: Callable[[type], Any] | None = None):
        super().__init__()
        self.what, self.make = what, make

    def register(self, cls: type) -> type:
        if cls.name in self:
            old = self[cls.name]
            raise RuntimeError(f"two {self.what} named {cls.name}: {getattr(old, '__module__', old)} and "
                               f"{cls.__module__}")
        self[cls.name] = self.make(cls) if self.make else cls
        return cls
