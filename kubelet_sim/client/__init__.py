"""What client-go gives a component: informers, retry on conflict, manifests, the event recorder."""
