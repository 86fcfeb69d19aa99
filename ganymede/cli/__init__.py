"""The ``ganymede`` command: one thin module per subcommand (parse, call, render, exit code)."""
