"""Tools: which ones the model is offered, checking their arguments, and the execution environment
of each task."""
