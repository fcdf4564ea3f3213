"""Configuration: the home folder, config.yaml, environment variables and .env, the declared keys
and their validation."""
