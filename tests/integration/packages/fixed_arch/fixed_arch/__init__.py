"""The library is not loaded at import: the farm only checks which archs it holds."""
