package dev.backfiller.client;

import java.util.List;
import java.util.stream.Collectors;

/** The server refused the request: {@link #errors()} says why, one entry per problem. */
public final class UserErrorsException extends RuntimeException {
  private final List<Model.UserError> errors;

  public UserErrorsException(List<Model.UserError> errors) {
    super(
        errors.stream()
            .map(e -> e.code() + " at " + (e.field() == null ? "input" : String.join(".", e.field()))
                + ": " + e.message())
            .collect(Collectors.joining("; ")));
    this.errors = List.copyOf(errors);
  }

  public List<Model.UserError> errors() {
    return errors;
  }

  public List<String> codes() {
    return errors.stream().map(Model.UserError::code).collect(Collectors.toList());
  }
}
