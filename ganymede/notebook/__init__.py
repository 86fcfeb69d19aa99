"""Language-free notebook helpers: pure functions over nbformat data (no server, no kernel)."""
