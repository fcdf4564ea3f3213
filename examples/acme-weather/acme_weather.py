from hermes_hookspecs import Tool, Toolset, hookimpl


def get_weather(args, ctx):
    return f"Sunny in {args['city']}"


async def get_forecast(args, ctx):
    return {"city": args["city"], "days": [{"day": d + 1, "sky": "sunny"} for d in range(args.get("days", 3))]}


@hookimpl
def hermes_register_toolsets(register):
    register(Toolset(name="weather", description="Weather lookups", tools=[
        Tool(name="get_weather", description="Current weather for a city",
             parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
             handler=get_weather),
        Tool(name="get_forecast", description="Forecast for the next days",
             parameters={"type": "object",
                         "properties": {"city": {"type": "string"},
                                        "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                         "required": ["city"]},
             handler=get_forecast)]))
