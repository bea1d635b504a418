"""Task generators: each returns a :class:`~tutorial_lib.tasks.base.TaskData`."""
from .base import TaskData  # noqa: F401
