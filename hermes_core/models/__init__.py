"""Model calls: choosing the provider, model and key; one call with retries and fallbacks; side
requests; cost estimates."""
