"""What the book measures: the retrieval task, one trainer, the toy model, the small Transformer, the port tools."""
