"""TLX-style kernel library (import name ``tlx_kernels``; the folder is ``kernels/``)."""
