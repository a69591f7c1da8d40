/* placeholder */ typedef int floe_placeholder_lua_sandbox;
