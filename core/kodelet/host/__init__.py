"""What an agent loop calls: sessions bound to a conversation, and result helpers."""
