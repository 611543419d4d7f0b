"""`qwen-review`: the review engine (staged diff → findings on changed lines) and its CLI."""
