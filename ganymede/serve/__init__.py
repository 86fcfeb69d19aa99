"""``ganymede serve``: a jupyter_server ServerApp with JupyterLab and Ganymede's server extension.

``app`` builds and runs the server; ``extension`` is the server extension (its context reaches
handlers through the tornado settings); ``contents`` keeps file ids in step with renames and
deletes made through the contents API; ``handlers/`` holds one module per REST service.
"""
