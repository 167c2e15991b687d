"""A module that raises as it is imported, as a user's env module with a bug in it does."""

raise RuntimeError("this env module is broken on purpose")
