"""Small shared pieces: the clock (real and fake) and the call trace."""
