"""The host API: kernels ask the server for notebooks through a comm, under their notebook's grant.

``api`` is the interface both halves share: the comm driver (transport) and the responder (the
method table and the grant checks). Neither imports the other's internals.
"""
