pytest_plugins = ["servicekit.pytest_plugin"]
