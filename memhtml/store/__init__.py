"""The git-backed file store: plumbing, the repository lock, layout and the merge driver."""
