"""``ganymede serve``: a jupyter_server ServerApp with JupyterLab and Ganymede's server extension.

``app`` builds and runs the server; ``extension`` is the server extension (its ``context``
reaches handlers through the tornado settings) and wires the packages beside it: ``rooms/``
(live documents), ``execution/`` (running cells into rooms), ``kernels/`` (host comms, kernel
websockets), ``agents/`` (the agent API) and ``handlers/`` (the small REST services and the URL
table). ``contents`` keeps file ids in step with renames and deletes made through the contents
API.
"""
