"""jinja2 templates of generated Python packages (package data of pyree)."""
