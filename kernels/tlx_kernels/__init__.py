"""TLX kernel library (import name ``tlx_kernels``; the folder is ``kernels/``): real TLX kernels on triton-utlx."""
