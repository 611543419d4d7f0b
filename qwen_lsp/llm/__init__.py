"""Talking to the model server: the openai-SDK client, parsers of model output, token counts, the call log."""
