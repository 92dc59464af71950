"""Stand-ins for the model APIs the agents speak: local HTTP servers that answer an
agent's model requests from a script of turns and log what the agent sent.

``kodelet verify --live`` drives a real agent binary against one (the model asks the
agent to run each probe call), and the end-to-end tests drive the pinned CLIs the same
way: :mod:`.messages` (Anthropic's Messages API, Claude Code), :mod:`.gemini` (Gemini's
generateContent, Gemini CLI), :mod:`.openai` (the Responses and Chat Completions APIs:
Codex, Qwen Code, Copilot CLI, opencode). Standard library only.
"""
