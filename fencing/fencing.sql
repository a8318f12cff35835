-- libzkelect fencing for PostgreSQL (docs/fencing.md).
--
-- A leader elected with libzkelect holds a fencing token: a number that
-- grows with every term on its election path. A deposed leader may still
-- write: it was paused after it last checked, or its write was already on
-- the wire. This file makes PostgreSQL refuse such a write, in the writing
-- transaction itself, so a refused write changes nothing.
--
-- Install once per database (idempotent; safe to run again on upgrade):
--     psql -d mydb -f /usr/share/zkelect/fencing.sql
-- Then begin every transaction that writes on behalf of a leader with
--     SELECT zkelect.fence('myapp', :token);
-- where 'myapp' names what is protected (one name per election path: tokens
-- of different paths do not compare) and :token is the leader's fencing
-- token (zkelect_fencing_token(), or $ZKELECT_TOKEN under zkelect run).
--
-- zkelect.fence() records the highest token seen for the resource and
-- takes that row's lock until the transaction ends. A token below the
-- highest seen raises SQLSTATE ZKE01 ("fenced"): the transaction is
-- aborted, nothing it did is kept. A token equal to the highest is the same
-- term and passes; a higher one starts a new term. Because the row stays
-- locked until commit, a new term's first fenced transaction waits for a
-- deposed leader's transaction that got in first, and every fenced
-- transaction of an older term that comes later is refused: no write of an
-- older term commits after a newer term's first fenced write.

CREATE SCHEMA IF NOT EXISTS zkelect;

CREATE TABLE IF NOT EXISTS zkelect.fence (
    resource   text        PRIMARY KEY,
    token      bigint      NOT NULL CHECK (token > 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE zkelect.fence IS
    'libzkelect fencing: the highest fencing token seen per resource (docs/fencing.md)';

CREATE OR REPLACE FUNCTION zkelect.fence(p_resource text, p_token bigint)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    highest bigint;
BEGIN
    IF p_resource IS NULL OR p_token IS NULL OR p_token <= 0 THEN
        RAISE EXCEPTION 'zkelect.fence(%, %): a resource name and a positive token are needed',
            quote_nullable(p_resource), quote_nullable(p_token)
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO zkelect.fence AS f (resource, token) VALUES (p_resource, p_token)
        ON CONFLICT (resource) DO UPDATE
            SET token = EXCLUDED.token, updated_at = now()
            WHERE f.token <= EXCLUDED.token
        RETURNING f.token INTO highest;
    IF highest IS NULL THEN
        SELECT f.token INTO highest FROM zkelect.fence f WHERE f.resource = p_resource;
        RAISE EXCEPTION 'zkelect fencing: token % of resource % is older than % (a later leader has written)',
            p_token, quote_literal(p_resource), highest
            USING ERRCODE = 'ZKE01',
                  HINT = 'this process no longer leads: stop writing and check zkelect_is_leader()';
    END IF;
    RETURN highest;
END;
$$;

COMMENT ON FUNCTION zkelect.fence(text, bigint) IS
    'Refuse (SQLSTATE ZKE01) unless p_token is at least the highest fencing token seen for p_resource; hold the resource''s fence row until the transaction ends';
