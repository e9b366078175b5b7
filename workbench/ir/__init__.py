"""The bottom layer: what a compile produced, as data every other layer reads (layer 0 of the README's design section).

The Artifact's types, one MLIR/TTGIR reader, one SASS reader, source maps and layouts as linear-layout data live
here; `workbench.compile` builds them and nothing here imports any other part of the workbench."""
