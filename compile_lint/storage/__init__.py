"""Files on disk, below every analysis: the one walk over a tree, the one file stamp, the one atomic writer."""
