"""One turn: the pipeline from a message to an answer (service.py, stages.py), the agent loop and what streams the answer."""
