"""The library is not loaded at import: tests read which archs the wheel holds from its name."""
