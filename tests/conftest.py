import os
import sys

# tests/ on the path: the shared fixtures (sample_kernels, standin_driver) import by name from any test folder
sys.path.insert(0, os.path.dirname(__file__))
