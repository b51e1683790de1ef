"""Contact submissions: input shapes, normalisation, rejection rules and job creation."""
