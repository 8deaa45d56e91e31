# SPDX-License-Identifier: GPL-2.0-only
# Sphinx configuration: sphinx-build -W -b html Documentation OUT
# (python3-sphinx).  The pages are plain RST and read as text without it.
project = 'lzchan'
copyright = 'the lzchan authors'
root_doc = master_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'
