"""What a learner sees when they answer: self-checks, exercises, how a verdict shows, the opt-in record."""
