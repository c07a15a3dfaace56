"""Third-party solver backends, one small module each (the package imported only inside ``solve``)."""
