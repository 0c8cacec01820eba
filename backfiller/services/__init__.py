"""The private service layer: what the server does, with no knowledge of GraphQL.

Between the transports (``resolvers`` for GraphQL and REST, ``daemon``) and the bottom layers
(``storage``, ``planning``, ``definitions``, ``domain``). It takes and returns private
dataclasses and never imports strawberry, ``schema`` or ``resolvers``: the resolvers translate
public inputs into its requests and its results into public types.

- :mod:`.launching`: validate, preview and create a backfill (every launch goes through it);
- :mod:`.selections`: a job's key space and a stored backfill's selection;
- :mod:`.trigger_evaluation`: evaluate a trigger and record the evaluation;
- :mod:`.trigger_runner`: run a trigger's function in a thread with a time limit;
- :mod:`.trigger_context`: what a trigger's function can read;
- :mod:`.trigger_requests`: the private, versioned stored form of an evaluation's requests.
"""
