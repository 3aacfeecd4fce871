"""The compiler's passes, one module each; :mod:`s2sad.pipeline` lists them in order."""
